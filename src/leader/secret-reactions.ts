import { secretsReferenced } from '../secrets/index.ts'
import { isKafkaSource } from '../store/index.ts'
import type { ResourceStore } from '../store/index.ts'

/**
 * The KafkaSources a changed Secret (`Secret/<namespace>/<name>`) concerns: new credentials, or a Secret now
 * found, make them look up their partition counts again.
 */
export function sourcesReferring(store: Pick<ResourceStore, 'snapshot'>, secretKey: string): string[] {
  const [, namespace, name] = secretKey.split('/')
  return store
    .snapshot(k => k.startsWith(`KafkaSource/${namespace}/`))
    .filter(entry => isKafkaSource(entry) && secretsReferenced(entry.object.spec.net).includes(name ?? ''))
    .map(entry => entry.key)
}
