import { clusterKey, kafkaErrorMessage, topicPartitions } from '../kafka/index.ts'
import type { KafkaClientSecurity } from '../kafka/index.ts'
import type { SourceNet } from '../secrets/index.ts'
import { isKafkaSource } from '../store/index.ts'
import type { StoredEntry, StoredKafkaSource } from '../store/index.ts'
import type { Log } from '../log/index.ts'

/**
 * The partition counts of sources' topics (the scheduler's NoMaxResourceCount), read with each source's
 * credentials and cached per cluster and credentials for a term.
 */
export class PartitionCounts {
  readonly #clientId: string
  readonly #log: Log
  /** Partition counts by clusterKey (brokers and credentials) and topic. */
  readonly #counts = new Map<string, number>()

  constructor(clientId: string, log: Log) {
    this.#clientId = clientId
    this.#log = log
  }

  /**
   * Reads the partition counts of every source's topics with one metadata request per Kafka cluster, so a new
   * leader with many sources does not open a client per source before its first pass.
   */
  async prefetch(entries: readonly StoredEntry[], net: SourceNet): Promise<void> {
    const byCluster = new Map<
      string,
      { brokers: readonly string[]; security: KafkaClientSecurity | undefined; topics: Set<string> }
    >()
    for (const entry of entries) {
      if (!isKafkaSource(entry)) continue
      const resolved = net(entry)
      if (resolved.kind === 'unresolved') continue
      const brokers = entry.object.spec.bootstrapServers
      const key = clusterKey(brokers, resolved.security)
      const cluster = byCluster.get(key) ?? { brokers, security: resolved.security, topics: new Set<string>() }
      for (const topic of entry.object.spec.topics) cluster.topics.add(topic)
      byCluster.set(key, cluster)
    }
    await Promise.all([...byCluster.values()].map(c => this.of(c.brokers, [...c.topics], c.security)))
  }

  /** The total partition count of a source's topics; unknown when its `spec.net` cannot be resolved. */
  async ofSource(entry: StoredEntry<StoredKafkaSource>, net: SourceNet): Promise<number | undefined> {
    const { spec } = entry.object
    const resolved = net(entry)
    return resolved.kind === 'resolved' ? this.of(spec.bootstrapServers, spec.topics, resolved.security) : undefined
  }

  /** The total partition count of `topics`; unknown when the cluster is unreachable. */
  async of(
    brokers: readonly string[],
    topics: readonly string[],
    security: KafkaClientSecurity | undefined
  ): Promise<number | undefined> {
    const cluster = clusterKey(brokers, security)
    const missing = topics.filter(t => !this.#counts.has(`${cluster}|${t}`))
    if (missing.length > 0) {
      try {
        const counts = await topicPartitions({ brokers, clientId: `${this.#clientId}-topics` }, missing, security)
        for (const [topic, count] of counts) this.#counts.set(`${cluster}|${topic}`, count)
      } catch (error) {
        this.#log('warn', 'could not read the partition counts of a source’s topics', {
          topics,
          error: kafkaErrorMessage(error)
        })
      }
    }
    let total = 0
    for (const topic of topics) {
      const count = this.#counts.get(`${cluster}|${topic}`)
      if (count === undefined) return undefined
      total += count
    }
    return total
  }
}
