import { RELEASE_ATTEMPT_MS, RELEASE_COMMIT_MS, REVOKE_DRAIN_MS } from './defaults.ts'
import type { MemberCommits } from './member-commits.ts'
import type { MemberContext } from './member-context.ts'
import type { OffsetTracker } from './offset-tracker.ts'
import type { PartitionRun } from './partition-run.ts'
import type { HandoverResult } from './types.ts'
import { sleep, withTimeout } from './wake.ts'

/** How long the draining mark's commit may take (after the commits before it); past it the drain goes on without. */
const MARK_COMMIT_MS = 2_000

// The hand-over of a partition between two members of a source's group, written where both can read it: the
// metadata of the group's committed offset (see `commit-metadata.ts`). A member that loses a partition with
// deliveries on the wire commits what is handled with the draining mark at once, lets those deliveries finish (at
// most REVOKE_DRAIN_MS), and commits again without the mark: the partition is released there. A member given a
// partition whose commit carries the mark waits for that release (at most HANDOVER_WAIT_MS, past the drain and its
// last commit) and starts exactly where it was made, skipping what the release names handled past it — so the
// records the former owner delivered are not delivered again.
//
// Both commits go only under the member id the partition was revoked under, and the mark names it: the coordinator
// takes a commit from a current member only, so once no member of the group has that id, nothing of the hand-over
// can land any more, and the next owner need not wait out HANDOVER_WAIT_MS (see `StartPositions`). A member that
// lost its id (removed from the group: it rejoins under a new one) sends neither.

/** A member's hand-overs of partitions: those it releases, and the count of every result. */
export class HandOvers {
  readonly #ctx: MemberContext
  readonly #commits: MemberCommits
  readonly #handovers: Record<HandoverResult, number> = {
    released: 0,
    awaited: 0,
    'timed-out': 0,
    abandoned: 0,
    failed: 0
  }
  /** Hand-overs of revoked partitions still draining (close waits for them). */
  readonly #releasing = new Set<Promise<void>>()

  constructor(ctx: MemberContext, commits: MemberCommits) {
    this.#ctx = ctx
    this.#commits = commits
  }

  counts(): Record<HandoverResult, number> {
    return { ...this.#handovers }
  }

  /** Resolves when every hand-over begun so far is over. */
  async settled(): Promise<void> {
    await Promise.all(this.#releasing)
  }

  /** Hands a revoked partition over in the background (see #handOver), bound to the member id of this moment. */
  begin(run: PartitionRun, tracker: OffsetTracker): void {
    const memberId = this.#ctx.consumer.memberId ?? undefined
    const handover = this.#handOver(run, tracker, memberId).finally(() => this.#releasing.delete(handover))
    this.#releasing.add(handover)
  }

  /** Counts a hand-over's result and tells the observer. */
  handedOver(result: HandoverResult): void {
    this.#handovers[result]++
    this.#ctx.options.observer?.onHandover?.({ sourceKey: this.#ctx.options.source.key, result })
  }

  /**
   * Hands a revoked partition over to its next owner, as this file's head describes: commits what is handled with
   * the draining mark while deliveries are on the wire, waits for them (at most REVOKE_DRAIN_MS), cuts the rest,
   * and commits the release. Each commit names the member's generation of the moment it is sent (the group may
   * have moved on, and the coordinator takes a commit from a current member) and `memberId`, the id the partition
   * was revoked under; without one (the member had just lost it) nothing is committed, and what is on the wire is cut
   * at once.
   */
  async #handOver(run: PartitionRun, tracker: OffsetTracker, memberId: string | undefined): Promise<void> {
    // The member's cut (its close's drain over, a fence) cuts this partition's wire too, whatever the hand-over is
    // waiting on — the mark's commit included.
    const cut = () => run.wire.abort()
    if (this.#ctx.signal.aborted) cut()
    else this.#ctx.signal.addEventListener('abort', cut, { once: true })
    try {
      await this.#drainAndRelease(run, tracker, memberId)
    } finally {
      this.#ctx.signal.removeEventListener('abort', cut)
    }
  }

  async #drainAndRelease(run: PartitionRun, tracker: OffsetTracker, memberId: string | undefined): Promise<void> {
    const drainUntil = Date.now() + REVOKE_DRAIN_MS
    if (run.inFlight > 0 && memberId !== undefined) {
      // Not sent once its try is over: a mark that landed after the release would stand until the next owner's wait ends.
      await this.#commits
        .chained(() => {
          const mark = { memberId, draining: true, sendBy: Date.now() + MARK_COMMIT_MS }
          return withTimeout(this.#commits.commitRuns([{ run, tracker }], mark), MARK_COMMIT_MS)
        })
        .catch(() => undefined)
      while (run.inFlight > 0 && Date.now() < drainUntil && !this.#ctx.signal.aborted) {
        await this.#ctx.wake.wait(drainUntil - Date.now())
      }
    }
    run.wire.abort()
    if (memberId === undefined) {
      this.handedOver('failed')
      this.#ctx.options.log(
        'warn',
        'a partition was revoked from a member without a member id; its next owner starts from the last commit',
        this.#ctx.fields({ partition: run.id, committable: String(tracker.committable()) })
      )
      tracker.release()
      return
    }
    const giveUpAt = Math.max(drainUntil, Date.now()) + RELEASE_COMMIT_MS
    // Never sent past the give-up time, even by a try that waited on its connection (see `OffsetCommitter.commit`).
    const release = { memberId, draining: false, sendBy: giveUpAt }
    for (let attempt = 1; ; attempt++) {
      try {
        // Bounded by the give-up time: a release that lands later could land after the next owner started. Each try
        // by RELEASE_ATTEMPT_MS too: one that waits on a coordinator that answers nothing is not the last.
        const bound = Math.max(1, Math.min(RELEASE_ATTEMPT_MS, giveUpAt - Date.now()))
        await this.#commits.chained(() => withTimeout(this.#commits.commitRuns([{ run, tracker }], release), bound))
        this.handedOver('released')
        break
      } catch (error) {
        if (Date.now() + 100 > giveUpAt || this.#ctx.signal.aborted) {
          this.handedOver('failed')
          this.#ctx.options.log(
            'warn',
            'handing over a revoked partition failed; its next owner starts from the last commit',
            this.#ctx.fields({ error, partition: run.id, committable: String(tracker.committable()), attempt })
          )
          break
        }
        await sleep(100, this.#ctx.signal)
      }
    }
    tracker.release()
  }
}
