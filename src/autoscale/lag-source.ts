import type { LagSource } from '../lag/index.ts'
import { unresolvedMessage } from '../secrets/index.ts'
import type { NetResolution } from '../secrets/index.ts'
import type { StoredEntry, StoredKafkaSource } from '../store/index.ts'

/**
 * How to read a KafkaSource's lag: its consumer group on its topics, reached with its resolved `spec.net` — or,
 * when that cannot be resolved, why not. The one place /metrics, the autoscaler and `shoal offsets` take it from.
 */
export function lagSourceOf(entry: StoredEntry<StoredKafkaSource>, net: NetResolution): LagSource {
  const { spec } = entry.object
  const security = net.kind === 'resolved' ? net.security : undefined
  return {
    query: {
      id: entry.key,
      brokers: spec.bootstrapServers,
      ...(security === undefined ? {} : { security }),
      groupId: spec.consumerGroup,
      topics: spec.topics,
      initialOffset: spec.initialOffset
    },
    ...(net.kind === 'unresolved' ? { netProblem: unresolvedMessage(net) } : {})
  }
}
