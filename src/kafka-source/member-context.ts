import type { Consumer } from '@platformatic/kafka'
import type { FetchLimits, KafkaClientSecurity } from '../kafka/index.ts'
import type { OffsetCommitter } from './offset-committer.ts'
import type { PartitionRun } from './partition-run.ts'
import type { Batching, Deliver, ConsumerSpec, SourceObserver } from './types.ts'
import type { Wake } from './wake.ts'
import type { Log } from '../log/index.ts'

export interface SourceMemberOptions {
  readonly brokers: readonly string[]
  /** SASL/TLS to the source's brokers (its resolved `spec.net`); absent: PLAINTEXT. */
  readonly security?: KafkaClientSecurity
  readonly clientId: string
  readonly source: ConsumerSpec
  readonly maxInFlight: number
  /** The static member id (KIP-345): a member that comes back under it within the session timeout keeps its partitions. */
  readonly groupInstanceId: string
  readonly deliver: Deliver
  /** Set: records go in batches through `batching.deliver` (not `deliver`); absent: one record at a time. */
  readonly batching?: Batching
  readonly committer: OffsetCommitter
  readonly log: Log
  /** Default: FETCH_MAX_BYTES and FETCH_PARTITION_MAX_BYTES. */
  readonly fetchLimits?: FetchLimits
  readonly observer?: SourceObserver
  /**
   * Whether this member looks for partitions added to its topics (default true). One member per group and
   * dispatcher is enough — its rejoin rebalances the whole group — so a runner lets only its first one look.
   */
  readonly watchPartitions?: boolean
}

/**
 * What a member's parts (membership, fetch, delivery window, start positions, commits, hand-overs) share: its
 * options and client, the partitions it owns, and its wake-up, stop and log fields. Only the member itself adds
 * and removes partitions.
 */
export interface MemberContext {
  readonly options: SourceMemberOptions
  readonly consumer: Consumer
  readonly topics: ReadonlySet<string>
  /** The partitions the member owns now, by `topic/partition`. */
  readonly runs: ReadonlyMap<string, PartitionRun>
  /** Notified whenever something a loop or a drain waits on changed. */
  readonly wake: Wake
  /** Aborted when the member closes past its drain: sleeps end at once. */
  readonly signal: AbortSignal
  /** Whether the member is closing: nothing new is joined, fetched or started. */
  stopping(): boolean
  /** Log fields naming the source and the member, with `extra`. */
  fields(extra: Record<string, unknown>): Record<string, unknown>
}
