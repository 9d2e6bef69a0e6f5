import type { CommitRefusal } from './offset-tracker.ts'

/** One committed record of a KafkaSource's topic, as handed to `deliver`. */
export interface SourceRecord {
  readonly topic: string
  readonly partition: number
  readonly offset: bigint
  /** Milliseconds since the epoch: the producer's CreateTime, or the broker's time on a LogAppendTime topic. */
  readonly timestamp: bigint
  readonly key: Buffer | null
  readonly value: Buffer | null
  /** Kafka headers in record order; a key may repeat. */
  readonly headers: ReadonlyArray<readonly [key: string, value: Buffer | null]>
  /**
   * When the fetch response that carried it arrived (`performance.now()` in this process): where the dispatch
   * delay (`shoal_source_dispatch_delay_seconds`) starts.
   */
  readonly fetchedAt?: number
}

/**
 * What became of a record. Each one counts as handled: its offset may be committed. A record is never
 * "failed": delivery retries and dead-letters by itself, and a `deliver` that throws is retried by the runner.
 */
export type Outcome = 'delivered' | 'dead-lettered' | 'dropped'

/**
 * Delivers one record under the source's delivery spec (retries, dead letter sink) and says what became of
 * it. Two signals end it early, and an early end is "not handled": `signal` when the record's partition leaves
 * the member (revoke, close) — nothing more may be sent, but a request already on the wire may finish, since the
 * sink has it and an answer now spares the next owner a duplicate; `wireSignal` when the runner gives up
 * waiting (close after its drain deadline) — that request is cut short too. Throwing means "not handled": the
 * runner retries the same record after a backoff (ordered mode keeps the partition's order).
 */
export type Deliver = (record: SourceRecord, signal: AbortSignal, wireSignal: AbortSignal) => Promise<Outcome>

/** When a batch closes: at `maxEvents` records, at `maxBytes` of record bytes, or `maxWaitMs` after its first record was fetched. */
export interface BatchLimits {
  readonly maxEvents: number
  readonly maxBytes: number
  readonly maxWaitMs: number
}

/**
 * Delivers a batch of one partition's records, in offset order, as a whole; resolves to each record's outcome
 * (same order). Its signals and a throw mean what they mean for `Deliver`: the whole batch is not handled and
 * is delivered again.
 */
export type DeliverBatch = (
  records: readonly SourceRecord[],
  signal: AbortSignal,
  wireSignal: AbortSignal
) => Promise<readonly Outcome[]>

/** A source that delivers in batches (see batch-builder.ts): when a batch closes, and how it is delivered. */
export interface Batching {
  readonly limits: BatchLimits
  readonly deliver: DeliverBatch
}

export const InitialOffsets = { EARLIEST: 'earliest', LATEST: 'latest' } as const
export type InitialOffset = (typeof InitialOffsets)[keyof typeof InitialOffsets]

/** Knative's `ordered` and `unordered`, and Shoal's `key`: one record of a key in delivery at a time. */
export const Orderings = { ORDERED: 'ordered', UNORDERED: 'unordered', KEY: 'key' } as const
export type Ordering = (typeof Orderings)[keyof typeof Orderings]

/**
 * What a KafkaSource's consumer runs: the part of its spec the consumer side needs, the group resolved (not
 * the API's KafkaSourceSpec, which the dispatcher reads this from).
 */
export interface ConsumerSpec {
  /** The source's key (`KafkaSource/namespace/name`), for logs and client ids. */
  readonly key: string
  readonly groupId: string
  readonly topics: readonly string[]
  /** Where a partition without a committed offset starts (also when the committed one fell off the log). */
  readonly initialOffset: InitialOffset
  readonly ordering: Ordering
  /** Records in flight per vreplica (group member), in both modes. Default DEFAULT_MAX_IN_FLIGHT. */
  readonly maxInFlight?: number
}

/**
 * What a member reports for metrics: commits its tracker refused, partitions handed between members, and records
 * skipped because a former owner's commit named them handled.
 */
export interface SourceObserver {
  onCommitRefused?(info: {
    readonly sourceKey: string
    readonly topic: string
    readonly partition: number
    readonly offset: bigint
    readonly reason: CommitRefusal
  }): void
  onHandover?(info: { readonly sourceKey: string; readonly result: HandoverResult }): void
  onSkipped?(info: { readonly sourceKey: string; readonly records: number }): void
  /** The group's leader found partitions a stable group held with nobody and rejoined to have them assigned. */
  onStrandedRepair?(info: { readonly sourceKey: string; readonly partitions: number }): void
}

/**
 * What became of a partition hand-over: `released`, a revoked partition drained and committed; `awaited`, a start
 * made at a former owner's release; `timed-out`, a release waited for in vain; `failed`, a release not committed.
 */
export type HandoverResult = 'released' | 'awaited' | 'timed-out' | 'abandoned' | 'failed'
