import type { CommitRefusal } from './offset-tracker.ts'
import type { PartitionRun } from './partition-run.ts'
import { unstarted } from './partition-run.ts'
import type { HandoverResult, Outcome } from './types.ts'

/** A member's partition as `status()` shows it. */
export interface PartitionStatus {
  readonly topic: string
  readonly partition: number
  /** Next offset to fetch; undefined while the start position is being looked up. */
  readonly position: bigint | undefined
  /** The offset a commit would name now. */
  readonly committable: bigint | undefined
  /** The offset last committed by this member. */
  readonly committed: bigint | undefined
  /**
   * Records not handled yet: the partition's last stable offset at the latest fetch minus the committable offset
   * (what a commit now would name). Undefined before the first fetch answer.
   */
  readonly lag: bigint | undefined
  readonly queued: number
  readonly inFlight: number
  /** Records fetched and not delivered: a former owner's commit named them handled. */
  readonly skipped: number
}

/** One group member as `status()` shows it. */
export interface GroupMemberStatus {
  readonly groupInstanceId: string
  readonly memberId: string | null
  readonly generationId: number
  /** Joins and rebalances this member took part in (the client's events). */
  readonly joins: number
  readonly rebalances: number
  readonly inFlight: number
  readonly queued: number
  readonly partitions: readonly PartitionStatus[]
  readonly outcomes: Readonly<Record<Outcome, number>>
  /** Times `deliver` threw (each retried). */
  readonly deliverErrors: number
  /** Commits refused by the offset tracker, by reason: each one a bug caught before it could lose a record. */
  readonly commitsRefused: Readonly<Record<CommitRefusal, number>>
  /** Hand-overs by result (see `HandoverResult`). */
  readonly handovers: Readonly<Record<HandoverResult, number>>
  /** Times this member, as the group's leader, made it reassign partitions a stable group held with nobody. */
  readonly strandedRepairs: number
}

/** An owned partition's status now. */
export function partitionStatusOf(run: PartitionRun): PartitionStatus {
  const committable = run.tracker?.committable()
  return {
    topic: run.topic,
    partition: run.partition,
    position: run.tracker?.position,
    committable,
    committed: run.tracker?.committed,
    lag: lagOf(run.endOffset, committable),
    queued: unstarted(run),
    inFlight: run.inFlight,
    skipped: run.tracker?.skipped ?? 0
  }
}

function lagOf(endOffset: bigint | undefined, committable: bigint | undefined): bigint | undefined {
  if (endOffset === undefined || committable === undefined) return undefined
  return endOffset > committable ? endOffset - committable : 0n
}
