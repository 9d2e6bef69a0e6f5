import { writeCommitNote } from './commit-metadata.ts'
import type { GroupMembership } from './group-membership.ts'
import type { MemberContext } from './member-context.ts'
import type { CommitRefusal } from './offset-tracker.ts'
import type { OwnedRun, PartitionRun } from './partition-run.ts'

/**
 * A hand-over's commit (see `partition-handover.ts`): sent only under `memberId`, the member id the partition was
 * revoked under, so the coordinator refuses it once that member is out of the group; `draining` writes the mark.
 */
export interface HandoverCommit {
  readonly memberId: string
  readonly draining: boolean
  /** Not sent past this time (ms since the epoch): the hand-over's window for it is over (see `OffsetCommitter`). */
  readonly sendBy: number
}

/**
 * A member's commit path: every offset it commits goes through `commitRuns`, and every commit runs after the
 * ones already on their way (see `chained`).
 */
export class MemberCommits {
  readonly #ctx: MemberContext
  readonly #membership: GroupMembership
  #commitChain: Promise<void> = Promise.resolve()
  #commitPending = false
  #commitFailures = 0
  readonly #commitsRefused: Record<CommitRefusal, number> = { 'past-unhandled': 0, released: 0, backwards: 0 }

  constructor(ctx: MemberContext, membership: GroupMembership) {
    this.#ctx = ctx
    this.#membership = membership
  }

  commitsRefused(): Record<CommitRefusal, number> {
    return { ...this.#commitsRefused }
  }

  /** Resolves when every commit on its way now is over. */
  settled(): Promise<void> {
    return this.#commitChain
  }

  /**
   * Runs a commit after every commit already on its way, so commits of one member reach the coordinator in the
   * order they were decided: a periodic commit sent before a revoke can neither erase the hand-over's draining
   * mark nor land after its release.
   */
  chained<T>(commit: () => Promise<T>): Promise<T> {
    const result = this.#commitChain.then(commit)
    this.#commitChain = result.then(
      () => undefined,
      () => undefined
    )
    return result
  }

  /** Commits the owned partitions now, after any commit already on its way. */
  requestCommit(): void {
    // A periodic tick while a commit is queued adds nothing: the queued one reads the offsets when it runs.
    if (this.#commitPending) return
    this.#commitPending = true
    this.#commitChain = this.#commitChain
      .then(() => {
        this.#commitPending = false
        return this.commitOnce()
      })
      .catch(error => {
        this.#commitFailures++
        // Commits fail during rebalances and coordinator moves; the next tick retries with fresh offsets.
        if (this.#commitFailures % 10 === 3) {
          this.#ctx.options.log(
            'warn',
            'offset commit failed',
            this.#ctx.fields({ error, failures: this.#commitFailures })
          )
        }
      })
  }

  /** Commits the owned partitions now (not chained). */
  async commitOnce(): Promise<void> {
    const owned: OwnedRun[] = []
    for (const run of this.#ctx.runs.values()) if (run.tracker !== undefined) owned.push({ run, tracker: run.tracker })
    await this.commitRuns(owned)
  }

  /**
   * The one way offsets are committed. Each partition's offset is its tracker's committable one, and the tracker
   * authorizes it (never past a record not handled, never backwards, never after the partition's release); a
   * refusal is counted and logged, and that partition left out. Beside each offset goes what its next owner needs
   * (see `commit-metadata.ts`): the records past it already handled, and the hand-over's mark when `handover` says
   * draining. A partition goes when its offset moved or that note changed; a hand-over's even when neither did.
   * Throws when the commit fails, or is not sent: a hand-over's when the member's id is no longer the one it is
   * bound to.
   */
  async commitRuns(runs: readonly OwnedRun[], handover?: HandoverCommit): Promise<void> {
    const mark = handover?.draining
      ? { draining: this.#ctx.options.groupInstanceId, drainingMemberId: handover.memberId }
      : { draining: undefined }
    const due: Array<OwnedRun & { offset: bigint; note: string | null }> = []
    for (const { run, tracker } of runs) {
      const offset = tracker.committable()
      const verdict = tracker.authorize(offset)
      if (verdict.kind === 'refused') {
        this.#refused(run, offset, verdict.reason, verdict.limit)
        continue
      }
      const note = writeCommitNote(offset, { handled: tracker.handledPast(), ...mark })
      if (verdict.kind === 'commit' || handover !== undefined || note !== tracker.committedNote)
        due.push({ run, tracker, offset, note })
    }
    if (due.length === 0) return
    const identity = await this.#membership.identityNow()
    if (handover !== undefined && Date.now() > handover.sendBy) {
      throw new Error('the hand-over’s commit was not sent within its window')
    }
    if (handover !== undefined && identity.memberId !== handover.memberId) {
      throw new Error(
        `member id ${identity.memberId} is not ${handover.memberId}, the one the partition was revoked under: ` +
          'the member left the group since, and its hand-over is not sent'
      )
    }
    const options = this.#ctx.options
    await options.committer.commit(
      { groupId: options.source.groupId, groupInstanceId: options.groupInstanceId, ...identity },
      due.map(({ run, offset, note }) => ({ topic: run.topic, partition: run.partition, offset, metadata: note })),
      handover?.sendBy
    )
    this.#commitFailures = 0
    for (const { tracker, offset, note } of due) tracker.committedAt(offset, note)
  }

  #refused(run: PartitionRun, offset: bigint, reason: CommitRefusal, limit: bigint): void {
    this.#commitsRefused[reason]++
    this.#ctx.options.observer?.onCommitRefused?.({
      sourceKey: this.#ctx.options.source.key,
      topic: run.topic,
      partition: run.partition,
      offset,
      reason
    })
    this.#ctx.options.log(
      'warn',
      'offset commit refused',
      this.#ctx.fields({ partition: run.id, offset: String(offset), reason, limit: String(limit) })
    )
  }
}
