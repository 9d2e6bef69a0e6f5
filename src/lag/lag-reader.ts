import {
  IsolationLevels,
  KafkaAdmin,
  clusterKey,
  kafkaClientOptions,
  kafkaErrorMessage,
  kafkaSecurityOptions
} from '../kafka/index.ts'
import type { KafkaClientSecurity } from '../kafka/index.ts'
import { lagBetween } from './lag.ts'

/** One consumer group whose lag is wanted. */
export interface LagQuery {
  /** Whatever the caller names it by (a source key); answers come back under it. */
  readonly id: string
  readonly brokers: readonly string[]
  /** The source's resolved `spec.net`: how to reach its brokers (absent: PLAINTEXT). */
  readonly security?: KafkaClientSecurity
  readonly groupId: string
  readonly topics: readonly string[]
  /** Where a partition without a committed offset starts: its lag counts from there. */
  readonly initialOffset: 'earliest' | 'latest'
}

/** A source whose lag is wanted: how to read it, or why it cannot be read (its `spec.net` does not resolve). */
export interface LagSource {
  /** Its `id` is the source's key. */
  readonly query: LagQuery
  /** Set when the source's `spec.net` cannot be resolved: its lag is then not read, for this reason. */
  readonly netProblem?: string
}

/** A consumer group's lag on one partition, as `lagBetween` defines it. */
export interface PartitionLag {
  readonly topic: string
  readonly partition: number
  /** The group's committed offset; undefined when it has none. */
  readonly committed: bigint | undefined
  /** Where the lag counts from: the committed offset, else where the query's initialOffset starts the group. */
  readonly from: bigint
  /** The last stable offset (ListOffsets, read_committed): the end of what a consumer can read. */
  readonly lastStable: bigint
  readonly lag: bigint
}

/** One group's lag now, or why it could not be read. */
export type LagReading =
  | { readonly kind: 'lag'; readonly totalLag: number; readonly partitions: readonly PartitionLag[] }
  | { readonly kind: 'unreadable'; readonly reason: string }

const LATEST = -1n
const EARLIEST = -2n

/**
 * The one reader of consumer-group lag, for /metrics, the dashboard, the autoscaler and `shoal offsets`: per
 * partition the last stable offset − the committed offset, or − where the source's initialOffset starts a group
 * that has not committed (`lagBetween`), so a transactional topic whose data is all read shows 0 (its commit
 * markers sit below the last stable offset) and every reader of it agrees. Per Kafka cluster and
 * poll: one metadata request, one ListOffsets per partition leader, and one OffsetFetch per group coordinator
 * carrying every group (OffsetFetch v8+ takes many) — not a request per source.
 */
export class LagReader {
  readonly #clientId: string
  readonly #admins = new Map<string, KafkaAdmin>()

  constructor(clientId = 'shoal-lag-reader') {
    this.#clientId = clientId
  }

  async read(queries: readonly LagQuery[]): Promise<Map<string, LagReading>> {
    // One client per cluster and credentials: sources with the same brokers but other credentials do not share.
    const byCluster = new Map<string, LagQuery[]>()
    for (const q of queries) {
      const cluster = clusterKey(q.brokers, q.security)
      byCluster.set(cluster, [...(byCluster.get(cluster) ?? []), q])
    }
    const out = new Map<string, LagReading>()
    await Promise.all(
      [...byCluster].map(async ([cluster, group]) => {
        try {
          for (const [id, reading] of await this.#readCluster(cluster, group)) out.set(id, reading)
        } catch (error) {
          // Start over with a fresh client next time: a broken connection can outlive the error.
          const admin = this.#admins.get(cluster)
          this.#admins.delete(cluster)
          void admin?.close().catch(() => undefined)
          const brokers = [...group[0]!.brokers].sort().join(',')
          const reason = `could not read the lag from ${brokers}: ${kafkaErrorMessage(error)}`
          for (const q of group) out.set(q.id, { kind: 'unreadable', reason })
        }
      })
    )
    return out
  }

  async close(): Promise<void> {
    const admins = [...this.#admins.values()]
    this.#admins.clear()
    await Promise.all(admins.map(a => a.close().catch(() => undefined)))
  }

  async #readCluster(cluster: string, queries: readonly LagQuery[]): Promise<Map<string, LagReading>> {
    const admin = this.#admin(cluster, queries[0]!)
    const topics = [...new Set(queries.flatMap(q => q.topics))]
    const metadata = await admin.metadata({ topics, forceUpdate: true })
    const counts = new Map<string, number>()
    for (const topic of topics) {
      const count = metadata.topics.get(topic)?.partitionsCount
      if (count !== undefined && count > 0) counts.set(topic, count)
    }
    const partitionsOf = (topic: string) => Array.from({ length: counts.get(topic) ?? 0 }, (_, i) => i)
    const readable = queries.filter(q => q.topics.every(t => counts.has(t)))
    const ends = await this.#offsets(admin, [...counts.keys()], partitionsOf, LATEST)
    const groups =
      readable.length === 0
        ? []
        : await admin.listConsumerGroupOffsets({
            groups: readable.map(q => ({
              groupId: q.groupId,
              topics: q.topics.map(name => ({ name, partitionIndexes: partitionsOf(name) }))
            }))
          })
    const committedOf = new Map<string, Map<string, bigint>>()
    for (const g of groups) {
      const offsets = new Map<string, bigint>()
      for (const t of g.topics)
        for (const p of t.partitions)
          if (p.committedOffset >= 0n) offsets.set(`${t.name}/${p.partitionIndex}`, p.committedOffset)
      committedOf.set(g.groupId, offsets)
    }
    // Partitions with no committed offset that start at the earliest: their lag counts from the log start.
    const needStarts = new Set<string>()
    for (const q of readable) {
      if (q.initialOffset !== 'earliest') continue
      const committed = committedOf.get(q.groupId)
      for (const t of q.topics) for (const p of partitionsOf(t)) if (!committed?.has(`${t}/${p}`)) needStarts.add(t)
    }
    const starts =
      needStarts.size > 0
        ? await this.#offsets(admin, [...needStarts], partitionsOf, EARLIEST)
        : new Map<string, bigint>()
    const out = new Map<string, LagReading>()
    for (const q of queries) {
      const missing = q.topics.filter(t => !counts.has(t))
      if (missing.length > 0) {
        out.set(q.id, { kind: 'unreadable', reason: `topic(s) ${missing.join(', ')} do not exist` })
        continue
      }
      const committed = committedOf.get(q.groupId)
      const partitions: PartitionLag[] = []
      let total = 0n
      for (const topic of q.topics) {
        for (const partition of partitionsOf(topic)) {
          const id = `${topic}/${partition}`
          const lastStable = ends.get(id) ?? 0n
          const own = committed?.get(id)
          const from = own ?? (q.initialOffset === 'earliest' ? (starts.get(id) ?? 0n) : lastStable)
          const lag = lagBetween(from, lastStable)
          total += lag
          partitions.push({ topic, partition, committed: own, from, lastStable, lag })
        }
      }
      out.set(q.id, { kind: 'lag', totalLag: Number(total), partitions })
    }
    return out
  }

  async #offsets(
    admin: KafkaAdmin,
    topics: readonly string[],
    partitionsOf: (topic: string) => number[],
    timestamp: bigint
  ): Promise<Map<string, bigint>> {
    const out = new Map<string, bigint>()
    if (topics.length === 0) return out
    const listed = await admin.listOffsets({
      topics: topics.map(name => ({
        name,
        partitions: partitionsOf(name).map(partitionIndex => ({ partitionIndex, timestamp }))
      })),
      isolationLevel: IsolationLevels.READ_COMMITTED
    })
    for (const t of listed) for (const p of t.partitions) out.set(`${t.name}/${p.partitionIndex}`, p.offset)
    return out
  }

  /** The client of `cluster` (a clusterKey), made from the brokers and security of a query of it. */
  #admin(cluster: string, query: LagQuery): KafkaAdmin {
    let admin = this.#admins.get(cluster)
    if (!admin) {
      admin = new KafkaAdmin({
        ...kafkaClientOptions(this.#clientId, query.brokers, 'request'),
        ...kafkaSecurityOptions(query.security),
        retries: 1,
        retryDelay: 200
      })
      this.#admins.set(cluster, admin)
    }
    return admin
  }
}
