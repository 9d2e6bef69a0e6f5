import type { NetResolution } from './net-resolution.ts'
import type { SecretKey } from './secret-key.ts'
import { resolveSourceNet } from './secret-source.ts'
import type { ResourceStore, StoredEntry, StoredKafkaSource } from '../store/index.ts'

/**
 * How the controller's own clients of a KafkaSource's cluster (lag, partition counts, `shoal offsets`) reach its
 * brokers: its `spec.net` resolved against this replica's copy of the store's Secrets, opened with `secretKey`.
 * The result holds credentials: hand it to a client, never to a log.
 */
export type SourceNet = (entry: StoredEntry<StoredKafkaSource>) => NetResolution

export function sourceNet(store: Pick<ResourceStore, 'peek'>, secretKey: SecretKey | undefined): SourceNet {
  return entry => resolveSourceNet(entry.object, k => store.peek(k)?.object, secretKey)
}
