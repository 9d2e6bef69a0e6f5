import { secretsReferenced } from './net-resolution.ts'
import { isKafkaSource } from '../store/index.ts'
import type { ResourceStore } from '../store/index.ts'

/**
 * The KafkaSources a changed Secret (`Secret/<namespace>/<name>`) concerns: new credentials, or a Secret now
 * found, make the leader look up their partition counts and the reconciler check them again.
 */
export function sourcesReferring(store: Pick<ResourceStore, 'snapshot'>, secretKey: string): string[] {
  const [, namespace, name] = secretKey.split('/')
  return store
    .snapshot(k => k.startsWith(`KafkaSource/${namespace}/`))
    .filter(entry => isKafkaSource(entry) && secretsReferenced(entry.object.spec.net).includes(name ?? ''))
    .map(entry => entry.key)
}
