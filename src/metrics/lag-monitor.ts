import { Admin } from '@platformatic/kafka'
import { clusterKey, kafkaErrorMessage, kafkaSecurityOptions } from '../kafka/index.ts'
import type { KafkaClientSecurity } from '../kafka/index.ts'
import { lagOf, partitionKey, ratesBetween } from './lag.ts'
import type { LagSample } from './lag.ts'

/** A KafkaSource as the lag monitor needs it. */
export interface LagTarget {
  /** `KafkaSource/namespace/name`. */
  readonly key: string
  readonly group: string
  readonly topics: readonly string[]
  readonly bootstrapServers: readonly string[]
  /** The source's resolved `spec.net` (absent: PLAINTEXT). */
  readonly security?: KafkaClientSecurity
  /** Why its `spec.net` cannot be resolved: the source is then not measured, and this is logged once. */
  readonly netProblem?: string
}

export interface LagMonitorOptions {
  /** The sources to measure now; asked on every round. */
  readonly targets: () => readonly LagTarget[]
  /** Default 5 s. */
  readonly intervalMs?: number
  /** How much history to keep per source (default 10 minutes). */
  readonly historyMs?: number
  readonly clientId?: string
  readonly log?: (message: string, error: unknown) => void
  readonly now?: () => number
}

/** A source's latest figures with its rates over the last interval. */
export interface LagReading extends LagSample {
  readonly consumedPerSec: number
  readonly producedPerSec: number
}

export const DEFAULT_LAG_INTERVAL_MS = 5_000
export const DEFAULT_LAG_HISTORY_MS = 10 * 60_000

/**
 * Measures every KafkaSource's consumer lag every few seconds, with one request of each kind per Kafka cluster
 * per round (metadata for the partitions, ListOffsets read_committed for the ends, OffsetFetch for all the groups
 * at once), and keeps a short history per source for rates and the dashboard. Lag is the group's: it spans every
 * dispatcher the source is placed on, which is why the control plane measures it, not a dispatcher.
 */
export class LagMonitor {
  readonly #options: LagMonitorOptions
  readonly #admins = new Map<string, Admin>()
  readonly #history = new Map<string, LagSample[]>()
  /** The `netProblem` last logged per source, so that it is logged once, not every round. */
  readonly #netProblems = new Map<string, string>()
  readonly #listeners = new Set<() => void>()
  readonly #now: () => number
  #timer: NodeJS.Timeout | undefined
  #round: Promise<void> | undefined
  #stopped = false

  constructor(options: LagMonitorOptions) {
    this.#options = options
    this.#now = options.now ?? Date.now
  }

  start(): void {
    if (this.#timer || this.#stopped) return
    const tick = () => {
      this.#round = this.measure().finally(() => {
        if (!this.#stopped) this.#timer = setTimeout(tick, this.#options.intervalMs ?? DEFAULT_LAG_INTERVAL_MS)
      })
    }
    this.#timer = setTimeout(tick, 0)
  }

  async stop(): Promise<void> {
    this.#stopped = true
    clearTimeout(this.#timer)
    await this.#round?.catch(() => undefined)
    await Promise.all([...this.#admins.values()].map(a => a.close().catch(() => undefined)))
    this.#admins.clear()
  }

  /** Called after every round. */
  onRound(listener: () => void): () => void {
    this.#listeners.add(listener)
    return () => this.#listeners.delete(listener)
  }

  /** The latest reading of every source measured in the last round. */
  readings(): Map<string, LagReading> {
    const out = new Map<string, LagReading>()
    for (const [key, samples] of this.#history) {
      const last = samples.at(-1)
      if (!last) continue
      const before = samples.at(-2)
      out.set(key, { ...last, ...(before ? ratesBetween(before, last) : { consumedPerSec: 0, producedPerSec: 0 }) })
    }
    return out
  }

  /** A source's samples, oldest first, over the history window. */
  history(key: string): readonly LagSample[] {
    return this.#history.get(key) ?? []
  }

  /** One round now: measures every target; a cluster that does not answer leaves its sources out of this round. */
  async measure(): Promise<void> {
    const targets = this.#options.targets()
    // One client per cluster and credentials; a source whose spec.net cannot be resolved is left out.
    const byCluster = new Map<string, LagTarget[]>()
    for (const t of targets) {
      if (t.netProblem !== undefined) {
        if (this.#netProblems.get(t.key) !== t.netProblem) {
          this.#netProblems.set(t.key, t.netProblem)
          this.#options.log?.(`could not measure the lag of ${t.key}`, t.netProblem)
        }
        continue
      }
      this.#netProblems.delete(t.key)
      const id = clusterKey(t.bootstrapServers, t.security)
      byCluster.set(id, [...(byCluster.get(id) ?? []), t])
    }
    const at = this.#now()
    const measured = new Set<string>()
    await Promise.all(
      [...byCluster].map(async ([cluster, list]) => {
        try {
          for (const [key, sample] of await this.#measureCluster(cluster, list, at)) {
            measured.add(key)
            this.#append(key, sample)
          }
        } catch (error) {
          const brokers = [...list[0]!.bootstrapServers].sort().join(',')
          this.#options.log?.(`could not measure the lag of sources on Kafka ${brokers}`, kafkaErrorMessage(error))
        }
      })
    )
    // Sources that are gone lose their history.
    const live = new Set(targets.map(t => t.key))
    for (const key of this.#history.keys()) if (!live.has(key)) this.#history.delete(key)
    for (const key of this.#netProblems.keys()) if (!live.has(key)) this.#netProblems.delete(key)
    for (const listener of this.#listeners) listener()
  }

  #append(key: string, sample: LagSample): void {
    const samples = this.#history.get(key) ?? []
    samples.push(sample)
    const horizon = sample.at - (this.#options.historyMs ?? DEFAULT_LAG_HISTORY_MS)
    while (samples.length > 0 && samples[0]!.at < horizon) samples.shift()
    this.#history.set(key, samples)
  }

  async #measureCluster(cluster: string, targets: readonly LagTarget[], at: number): Promise<Map<string, LagSample>> {
    const admin = this.#admin(cluster, targets[0]!)
    const topics = [...new Set(targets.flatMap(t => t.topics))]
    const metadata = await admin.metadata({ topics, forceUpdate: true })
    const partitionsOf = new Map<string, number>()
    for (const topic of topics) {
      const count = metadata.topics.get(topic)?.partitionsCount
      if (count !== undefined) partitionsOf.set(topic, count)
    }
    const known = [...partitionsOf]
    const listed = await admin.listOffsets({
      // 1 = read_committed: lag is measured against the last stable offset, as the autoscaler's is.
      isolationLevel: 1,
      topics: known.map(([name, count]) => ({
        name,
        partitions: Array.from({ length: count }, (_, p) => ({ partitionIndex: p, timestamp: -1n }))
      }))
    })
    const ends = new Map<string, bigint>()
    for (const topic of listed)
      for (const p of topic.partitions) ends.set(partitionKey(topic.name, p.partitionIndex), p.offset)
    const groups = await admin.listConsumerGroupOffsets({ groups: [...new Set(targets.map(t => t.group))] })
    const committedByGroup = new Map<string, Map<string, bigint>>()
    for (const group of groups) {
      const committed = new Map<string, bigint>()
      for (const topic of group.topics)
        for (const p of topic.partitions) committed.set(partitionKey(topic.name, p.partitionIndex), p.committedOffset)
      committedByGroup.set(group.groupId, committed)
    }
    const out = new Map<string, LagSample>()
    for (const target of targets) {
      const partitions = target.topics.flatMap(topic =>
        Array.from({ length: partitionsOf.get(topic) ?? 0 }, (_, p) => partitionKey(topic, p))
      )
      const figures = lagOf(ends, committedByGroup.get(target.group) ?? new Map(), partitions)
      out.set(target.key, { at, ...figures })
    }
    return out
  }

  /** The client of `cluster` (a clusterKey), made from the brokers and security of a target on it. */
  #admin(cluster: string, target: LagTarget): Admin {
    let admin = this.#admins.get(cluster)
    if (!admin) {
      admin = new Admin({
        clientId: this.#options.clientId ?? 'shoal-lag-monitor',
        bootstrapBrokers: [...target.bootstrapServers],
        ...kafkaSecurityOptions(target.security),
        retries: 2,
        retryDelay: 200
      })
      this.#admins.set(cluster, admin)
    }
    return admin
  }
}
