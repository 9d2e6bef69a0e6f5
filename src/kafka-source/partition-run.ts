import type { KeyBatches } from './key-batches.ts'
import { KeyLanes } from './key-lanes.ts'
import type { OffsetTracker, TrackedOffset } from './offset-tracker.ts'
import type { SourceRecord } from './types.ts'

/** One owned partition's state in a member. */
export interface PartitionRun {
  readonly id: string
  readonly topic: string
  readonly partition: number
  /** Undefined until the start position is known (committed offset, or initialOffset). */
  tracker: OffsetTracker | undefined
  /** Fetched records not started yet, from `head` on (a started one is let go). */
  queue: Array<QueuedRecord | undefined>
  head: number
  /** `ordering: key`: records taken from the queue that wait behind a record of their key (empty otherwise). */
  readonly lanes: KeyLanes<QueuedRecord>
  /** `ordering: key` with batches: the batch being built and the records waiting behind a batch out (set on first use). */
  keyBatches: KeyBatches<QueuedRecord> | undefined
  inFlight: number
  /** Set once the partition is no longer this member's: nothing more is fetched or started for it. */
  revoked: boolean
  /** Aborted when the partition leaves the member: its deliveries send nothing more (see `Deliver`). */
  readonly stop: AbortController
  /** Aborted when its drain is over: requests still on the wire are cut short. */
  readonly wire: AbortController
  resetting: boolean
  /** The partition's last stable offset in the latest fetch answer (read_committed: where it ends for us). */
  endOffset: bigint | undefined
  /** Its latest answer held no batch although data waited below the last stable offset: asked first next time. */
  starved: boolean
}

/** A fetched record waiting for a delivery slot, with the tracker entry its outcome settles. */
export interface QueuedRecord {
  readonly record: SourceRecord
  readonly tracker: OffsetTracker
  readonly entry: TrackedOffset
}

/** A partition with a known start position, as the commit path takes it. */
export interface OwnedRun {
  readonly run: PartitionRun
  readonly tracker: OffsetTracker
}

/** A partition just assigned: nothing fetched, its start position not known yet. */
export function newPartitionRun(id: string, topic: string, partition: number): PartitionRun {
  return {
    id,
    topic,
    partition,
    tracker: undefined,
    queue: [],
    head: 0,
    lanes: new KeyLanes(),
    keyBatches: undefined,
    inFlight: 0,
    revoked: false,
    stop: new AbortController(),
    wire: new AbortController(),
    resetting: false,
    endOffset: undefined,
    starved: false
  }
}

/** Records taken from a partition's queue that wait behind their key (`ordering: key`, with or without batches). */
export function waitingBehindKeys(run: PartitionRun): number {
  return run.lanes.waiting + (run.keyBatches?.waiting ?? 0)
}

/** A partition's records fetched and not started: queued, waiting behind their key, or in a batch being built. */
export function unstarted(run: PartitionRun): number {
  return run.queue.length - run.head + waitingBehindKeys(run) + (run.keyBatches?.building ?? 0)
}
