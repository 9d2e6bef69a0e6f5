import { resourceKey } from '../api/index.ts'
import type { KafkaSource } from '../api/index.ts'
import { isSealedSecret } from '../store/index.ts'
import type { StoredObject } from '../store/index.ts'
import { resolveNet } from './net-resolution.ts'
import type { NetResolution } from './net-resolution.ts'
import { openSecret } from './sealed-secret.ts'
import type { SecretKey } from './secret-key.ts'

/**
 * Resolves a KafkaSource's `spec.net` against stored Secrets: `stored` gives the store form of a resource by key
 * (the controller's store, or a dispatcher's copy of the resources topic), `key` opens the sealed values. A
 * source only ever sees Secrets of its own namespace: the lookup is keyed by the source's namespace.
 */
export function resolveSourceNet(
  source: Pick<KafkaSource, 'metadata' | 'spec'>,
  stored: (key: string) => StoredObject | undefined,
  key: SecretKey | undefined
): NetResolution {
  return resolveNet(source.spec.net, name => {
    const object = stored(resourceKey('Secret', source.metadata.namespace, name))
    return object === undefined || !isSealedSecret(object) ? undefined : openSecret(object, key)
  })
}
