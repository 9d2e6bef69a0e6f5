import { Counter, Gauge, Histogram } from 'prom-client'
import type { Registry } from 'prom-client'
import { statusClass } from '../delivery/index.ts'
import type { SourceObserver } from '../kafka-source/index.ts'
import type { AttemptInfo, DeliveryObserver, Endpoint, OutcomeInfo, RetryInfo } from '../delivery/index.ts'
import { rankSources } from './rank-sources.ts'
import { otherLabels, sourceLabels } from './source-labels.ts'
import type { SourceLabels } from './source-labels.ts'

/** Sources with a `source` label of their own, per dispatcher, when not told. */
export const DEFAULT_MAX_SOURCE_LABELS = 200
/** How often (at most, on a scrape) the labelled sources are chosen again. */
export const DEFAULT_RANK_INTERVAL_MS = 60_000
/** Buckets of shoal_source_delivery_duration_seconds: a fast sink's milliseconds to a dead letter sink's minutes. */
export const DELIVERY_DURATION_BUCKETS: readonly number[] = Object.freeze([
  0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300
])
/**
 * Buckets of shoal_source_dispatch_delay_seconds: sub-millisecond when a connection and a window slot are free,
 * up to minutes when records queue behind a slow sink's connection cap.
 */
export const DISPATCH_DELAY_BUCKETS: readonly number[] = Object.freeze([
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300
])

/**
 * A source as the data plane sees it now: its key (`Kind/namespace/name`), its records in flight and, for a
 * KafkaSource, the lag of each partition this dispatcher's members own.
 */
export interface SourceActivity {
  readonly source: string
  readonly inFlight: number
  readonly partitions?: ReadonlyArray<{ readonly topic: string; readonly partition: number; readonly lag: number }>
}

export interface SourceMetricsOptions {
  readonly maxSourceLabels?: number
  readonly rankIntervalMs?: number
}

/** An attempt's `status_class`: what came back, or `network` when no response came (refused, reset, timeout). */
export type StatusClassLabel = '1xx' | '2xx' | '3xx' | '4xx' | '5xx' | 'network'

const STATUS_CLASSES: readonly StatusClassLabel[] = ['1xx', '2xx', '3xx', '4xx', '5xx', 'network']
const ENDPOINTS: readonly Endpoint[] = ['sink', 'dead-letter']

type SourceLabel = 'source' | 'kind'

/**
 * The per-source metrics of one dispatcher, fed by the deliverer's hooks. At most `maxSourceLabels` sources have
 * a `source` label of their own; the others are counted under `source="_other"` (see rankSources for who wins).
 */
export class SourceMetrics implements DeliveryObserver, SourceObserver {
  readonly #max: number
  readonly #rankIntervalMs: number
  readonly #consumed: Counter<SourceLabel>
  readonly #delivered: Counter<SourceLabel | 'endpoint' | 'status_class'>
  readonly #retries: Counter<SourceLabel | 'endpoint'>
  readonly #deadLettered: Counter<SourceLabel>
  readonly #dropped: Counter<SourceLabel>
  readonly #duration: Histogram<SourceLabel>
  readonly #dispatchDelay: Histogram<SourceLabel>
  readonly #inFlight: Gauge<SourceLabel>
  readonly #lag: Gauge<SourceLabel>
  readonly #partitionLag: Gauge<SourceLabel | 'topic' | 'partition'>
  readonly #sources: Gauge<'labelled'>
  readonly #commitsRefused: Counter<'reason'>
  readonly #strandedRepairs: Counter
  readonly #handovers: Counter<'result'>
  readonly #skipped: Counter
  /** Labelled source key → its labels. */
  #labelled = new Map<string, SourceLabels>()
  /** Hooks called per source since the last ranking. */
  #activity = new Map<string, number>()
  #rankedAt = Number.NEGATIVE_INFINITY

  constructor(registry: Registry, options: SourceMetricsOptions = {}) {
    this.#max = options.maxSourceLabels ?? DEFAULT_MAX_SOURCE_LABELS
    this.#rankIntervalMs = options.rankIntervalMs ?? DEFAULT_RANK_INTERVAL_MS
    if (!Number.isSafeInteger(this.#max) || this.#max < 0) {
      throw new RangeError(`maxSourceLabels ${this.#max} is not an integer >= 0`)
    }
    if (!(this.#rankIntervalMs >= 0)) throw new RangeError(`rankIntervalMs ${this.#rankIntervalMs} is below 0`)
    const registers = [registry]
    const labelNames = ['source', 'kind'] as const
    this.#consumed = new Counter({
      name: 'shoal_source_records_consumed_total',
      help: 'Records read from the source and handled: delivered, dead-lettered or dropped (their offsets may be committed).',
      labelNames,
      registers
    })
    this.#delivered = new Counter({
      name: 'shoal_source_events_delivered_total',
      help: 'Delivery attempts by what came back: the status class, or network when no response came.',
      labelNames: [...labelNames, 'endpoint', 'status_class'],
      registers
    })
    this.#retries = new Counter({
      name: 'shoal_source_delivery_retries_total',
      help: 'Retries scheduled after a failed attempt (backoff or Retry-After).',
      labelNames: [...labelNames, 'endpoint'],
      registers
    })
    this.#deadLettered = new Counter({
      name: 'shoal_source_events_dead_lettered_total',
      help: 'Events accepted by the dead letter sink.',
      labelNames,
      registers
    })
    this.#dropped = new Counter({
      name: 'shoal_source_events_dropped_total',
      help: 'Events given up on: no dead letter sink, or it failed on every allowed attempt.',
      labelNames,
      registers
    })
    this.#duration = new Histogram({
      name: 'shoal_source_delivery_duration_seconds',
      help: 'From delivery start to its outcome (delivered, dead-lettered or dropped), queueing and retries included.',
      labelNames,
      buckets: [...DELIVERY_DURATION_BUCKETS],
      registers
    })
    this.#dispatchDelay = new Histogram({
      name: 'shoal_source_dispatch_delay_seconds',
      help: 'From a record being fetched to its first request handed to the socket (observed when that attempt ends).',
      labelNames,
      buckets: [...DISPATCH_DELAY_BUCKETS],
      registers
    })
    this.#inFlight = new Gauge({
      name: 'shoal_source_in_flight',
      help: 'Records handed to delivery and not yet handled.',
      labelNames,
      registers
    })
    this.#lag = new Gauge({
      name: 'shoal_source_owned_lag',
      help: 'Records not handled yet over the partitions this dispatcher owns: last stable offset minus committable offset (the consumer group lag is the controller’s shoal_source_lag).',
      labelNames,
      registers
    })
    this.#partitionLag = new Gauge({
      name: 'shoal_source_partition_lag',
      help: 'Records not handled yet in one owned partition (labelled sources only): last stable offset minus committable offset.',
      labelNames: [...labelNames, 'topic', 'partition'],
      registers
    })
    this.#commitsRefused = new Counter({
      name: 'shoal_source_commits_refused_total',
      help: 'Offset commits a KafkaSource member refused to send, by reason (past-unhandled, backwards, released): each a bug caught before it lost or redelivered a record.',
      labelNames: ['reason'],
      registers
    })
    this.#handovers = new Counter({
      name: 'shoal_source_partition_handovers_total',
      help: 'Partitions handed between members of a KafkaSource group, by result: released (a revoked partition drained and committed), awaited (a start made at that release), timed-out (a release waited for in vain), abandoned (a start past a release that can no longer come: its former owner left the group), failed (a release not committed).',
      labelNames: ['result'],
      registers
    })
    this.#skipped = new Counter({
      name: 'shoal_source_records_skipped_total',
      help: "Records a KafkaSource member fetched and did not deliver because a former owner's commit named them handled (delivered before a rebalance, past a record that held the commit back).",
      registers
    })
    this.#strandedRepairs = new Counter({
      name: 'shoal_source_stranded_repairs_total',
      help: "Rebalances a KafkaSource group's leader started because partitions of its stable group were held by no member (a cooperative move cut short between its two rounds).",
      registers
    })
    this.#sources = new Gauge({
      name: 'shoal_dispatcher_sources',
      help: 'Sources this dispatcher has metrics for, by whether they have a source label of their own.',
      labelNames: ['labelled'],
      registers
    })
  }

  onCommitRefused(info: { readonly reason: string }): void {
    this.#commitsRefused.inc({ reason: info.reason })
  }

  onHandover(info: { readonly result: string }): void {
    this.#handovers.inc({ result: info.result })
  }

  onSkipped(info: { readonly records: number }): void {
    this.#skipped.inc(info.records)
  }

  onStrandedRepair(): void {
    this.#strandedRepairs.inc()
  }

  onAttempt(info: AttemptInfo): void {
    const labels = this.#labelsOf(info.sourceKey)
    const cls: StatusClassLabel = info.status === undefined ? 'network' : statusClass(info.status)
    this.#delivered.inc({ ...labels, endpoint: info.endpoint, status_class: cls })
    if (info.dispatchDelayMs !== undefined) this.#dispatchDelay.observe(labels, info.dispatchDelayMs / 1000)
  }

  onRetry(info: RetryInfo): void {
    this.#retries.inc({ ...this.#labelsOf(info.sourceKey), endpoint: info.endpoint })
  }

  onOutcome(info: OutcomeInfo): void {
    // An aborted delivery is not an outcome: the record is delivered again (here or on another dispatcher).
    if (info.outcome.kind === 'aborted') return
    const labels = this.#labelsOf(info.sourceKey)
    // A batch's outcome is each of its events'.
    const events = info.events ?? 1
    this.#consumed.inc(labels, events)
    if (info.outcome.kind === 'dead-lettered') this.#deadLettered.inc(labels, events)
    else if (info.outcome.kind === 'dropped') this.#dropped.inc(labels, events)
    this.#duration.observe(labels, info.latencyMs / 1000)
  }

  /**
   * Sets the in-flight gauges from what the data plane reports now and, once per rank interval, chooses the
   * labelled sources again: a source that loses its label loses its series, and its counts go on under `_other`.
   */
  refresh(sources: readonly SourceActivity[], now: number): void {
    if (now - this.#rankedAt >= this.#rankIntervalMs) {
      this.#rank(sources)
      this.#rankedAt = now
    }
    this.#inFlight.reset()
    this.#lag.reset()
    this.#partitionLag.reset()
    let unlabelled = 0
    for (const { source, inFlight, partitions } of sources) {
      const own = this.#labelled.get(source) ?? this.#labelIfRoom(source)
      if (own === undefined) unlabelled++
      const labels = own ?? otherLabels(source)
      this.#inFlight.inc(labels, inFlight)
      if (partitions === undefined) continue
      let lag = 0
      for (const p of partitions) {
        lag += p.lag
        if (own !== undefined) this.#partitionLag.set({ ...own, topic: p.topic, partition: String(p.partition) }, p.lag)
      }
      this.#lag.inc(labels, lag)
    }
    this.#sources.set({ labelled: 'true' }, this.#labelled.size)
    this.#sources.set({ labelled: 'false' }, unlabelled)
  }

  #labelsOf(sourceKey: string): SourceLabels {
    this.#activity.set(sourceKey, (this.#activity.get(sourceKey) ?? 0) + 1)
    return this.#labelled.get(sourceKey) ?? this.#labelIfRoom(sourceKey) ?? otherLabels(sourceKey)
  }

  // While there is room, a new source is labelled at once rather than at the next ranking.
  #labelIfRoom(sourceKey: string): SourceLabels | undefined {
    if (this.#labelled.size >= this.#max) return undefined
    const labels = sourceLabels(sourceKey)
    this.#labelled.set(sourceKey, labels)
    return labels
  }

  #rank(sources: readonly SourceActivity[]): void {
    const scores = new Map<string, number>()
    for (const { source, inFlight } of sources) {
      scores.set(source, (scores.get(source) ?? 0) + inFlight + (this.#activity.get(source) ?? 0))
    }
    for (const [source, count] of this.#activity) if (!scores.has(source)) scores.set(source, count)
    const chosen = rankSources(scores, new Set(this.#labelled.keys()), this.#max)
    const labelled = new Map<string, SourceLabels>()
    for (const [key, labels] of this.#labelled) {
      if (chosen.has(key)) labelled.set(key, labels)
      else this.#removeSeries(labels)
    }
    for (const key of chosen) if (!labelled.has(key)) labelled.set(key, sourceLabels(key))
    this.#labelled = labelled
    this.#activity = new Map()
  }

  #removeSeries(labels: SourceLabels): void {
    this.#consumed.remove(labels)
    this.#deadLettered.remove(labels)
    this.#dropped.remove(labels)
    this.#duration.remove(labels)
    this.#dispatchDelay.remove(labels)
    this.#inFlight.remove(labels)
    this.#lag.remove(labels)
    for (const endpoint of ENDPOINTS) {
      this.#retries.remove({ ...labels, endpoint })
      for (const cls of STATUS_CLASSES) this.#delivered.remove({ ...labels, endpoint, status_class: cls })
    }
  }
}
