import { IsolationLevels } from '../kafka/index.ts'
import { GONE_OWNER_WAIT_MS, HANDOVER_WAIT_MS } from './defaults.ts'
import type { GroupMembership } from './group-membership.ts'
import { readCommitNote } from './commit-metadata.ts'
import type { CommitNoteReading } from './commit-metadata.ts'
import type { MemberCommits } from './member-commits.ts'
import type { MemberContext } from './member-context.ts'
import type { CommittedOffset } from './offset-committer.ts'
import { OffsetTracker } from './offset-tracker.ts'
import type { HandOvers } from './partition-handover.ts'
import type { PartitionRun } from './partition-run.ts'
import { sleep } from './wake.ts'

/** How often a former owner's member id is looked for in the group while a partition waits for its release. */
const GONE_CHECK_MS = 500

// Special ListOffsets timestamps.
const EARLIEST_TIMESTAMP = -2n
const LATEST_TIMESTAMP = -1n

/** Where a member's partitions read from: their start when assigned, and a move back into the log when out of range. */
export class StartPositions {
  readonly #ctx: MemberContext
  readonly #membership: GroupMembership
  readonly #commits: MemberCommits
  readonly #handOvers: HandOvers

  constructor(ctx: MemberContext, membership: GroupMembership, commits: MemberCommits, handOvers: HandOvers) {
    this.#ctx = ctx
    this.#membership = membership
    this.#commits = commits
    this.#handOvers = handOvers
  }

  /**
   * Where newly assigned partitions start: the group's committed offset, else initialOffset; the records its
   * metadata names handled are skipped (see `commit-metadata.ts`). A committed offset with the draining mark (see
   * `partition-handover.ts`) is waited on until its former owner releases it, at most HANDOVER_WAIT_MS from when
   * this member first saw the mark, or GONE_OWNER_WAIT_MS once the member id the mark names is out of the group.
   */
  async resolve(runs: readonly PartitionRun[]): Promise<void> {
    const current = (): PartitionRun[] => runs.filter(r => !r.revoked && r.tracker === undefined)
    const markSeen = new Map<PartitionRun, number>()
    /** Runs starting past a mark never released: their first commit clears it. */
    const pastMark = new Set<PartitionRun>()
    /** A marked member id → when it was last looked for in the group, and whether it was gone. */
    const goneChecks = new Map<string, { readonly at: number; readonly gone: boolean }>()
    /** Runs whose mark's member id was seen gone, with that id: the committed offset read after that look is final. */
    const ownerGone = new Map<PartitionRun, string>()
    for (let attempt = 1; !this.#ctx.stopping() && current().length > 0; attempt++) {
      const pending = current()
      try {
        const committed = await this.#committedOffsets(pending)
        const missing: PartitionRun[] = []
        const starts = new Map<PartitionRun, bigint>()
        /** What each committed offset's metadata says, read once: its mark, and the records handled past it. */
        const notes = new Map<PartitionRun, CommitNoteReading>()
        let waiting = false
        for (const run of pending) {
          const found = committed.get(run.id)
          const note =
            found === undefined || found.offset < 0n ? undefined : readCommitNote(found.offset, found.metadata)
          if (note !== undefined) notes.set(run, note)
          if (note?.unreadable !== undefined) {
            this.#ctx.options.log(
              'warn',
              'a committed offset carries metadata not understood; no record past it is skipped',
              this.#ctx.fields({ partition: run.id, reason: note.unreadable })
            )
          }
          const draining = note?.draining
          if (draining !== undefined) {
            const seen = markSeen.get(run) ?? Date.now()
            markSeen.set(run, seen)
            const memberId = note?.drainingMemberId
            // Gone once, the next read of the offsets is one made after the look: a release that landed before it
            // is read (and awaited), not started past.
            // (For that mark only: a newer one, of another former owner, is looked at afresh.)
            const gone = memberId !== undefined && ownerGone.get(run) === memberId
            if (!gone && Date.now() - seen < HANDOVER_WAIT_MS) {
              if (
                memberId !== undefined &&
                Date.now() - seen >= GONE_OWNER_WAIT_MS &&
                (await this.#goneFromGroup(memberId, goneChecks))
              ) {
                ownerGone.set(run, memberId)
              }
              waiting = true
              continue
            }
            this.#handOvers.handedOver(gone ? 'abandoned' : 'timed-out')
            pastMark.add(run)
            this.#ctx.options.log(
              'warn',
              gone
                ? 'a former owner left the group without releasing the partition; starting from its last commit'
                : 'a former owner did not release the partition in time; starting from its last commit',
              this.#ctx.fields({ partition: run.id, formerOwner: draining, memberId, offset: String(found?.offset) })
            )
          } else if (markSeen.has(run)) {
            this.#handOvers.handedOver('awaited')
          }
          if (found === undefined || found.offset < 0n) missing.push(run)
          else starts.set(run, found.offset)
        }
        if (missing.length > 0) {
          for (const [run, offset] of await this.#initialPositions(missing)) starts.set(run, offset)
        }
        for (const [run, offset] of starts) {
          if (run.revoked || run.tracker !== undefined) continue
          // A start taken from the committed offset needs no commit; one from initialOffset gets one at once, and
          // so does one past a draining mark its former owner never released (the commit clears the mark).
          const recommit = missing.includes(run) || pastMark.has(run)
          // What the commit says its owner handled past it holds also when that owner never released the partition.
          const inherited = missing.includes(run) ? [] : (notes.get(run)?.handled ?? [])
          run.tracker = recommit
            ? new OffsetTracker(offset, undefined, inherited)
            : new OffsetTracker(offset, offset, inherited, committed.get(run.id)?.metadata)
        }
        if (missing.length > 0) this.#commits.requestCommit()
        this.#ctx.wake.notify()
        if (waiting) await sleep(100, this.#ctx.signal)
      } catch (error) {
        if (this.#ctx.stopping()) return
        this.#ctx.options.log('warn', 'looking up start offsets failed; retrying', this.#ctx.fields({ error, attempt }))
        // At most a second apart: a lookup fails while the coordinator moves (a broker lost), and every second more
        // is a second the partitions deliver nothing once it has moved.
        await sleep(Math.min(1_000, 250 * 2 ** Math.min(attempt, 2)), this.#ctx.signal)
      }
    }
  }

  /**
   * The fetch position is not in the log: below its start (retention deleted records) it starts again at the
   * log's start, past its end (the log was truncated) at its end — whatever `initialOffset` says, so no record that
   * still exists is skipped. Moving forward skips nothing; moving back waits until the partition has nothing
   * outstanding.
   */
  async resetOutOfRange(run: PartitionRun, position: bigint): Promise<void> {
    if (run.resetting) return
    run.resetting = true
    try {
      const [start, end] = await Promise.all(
        [EARLIEST_TIMESTAMP, LATEST_TIMESTAMP].map(async t => (await this.#offsetsAt([run], t)).get(run)!)
      )
      if (run.revoked || run.tracker === undefined || run.tracker.position !== position) return
      const target = position < start! ? start! : position > end! ? end! : position
      if (target === position) return
      this.#ctx.options.log(
        'warn',
        'fetch position out of range; moving to the log',
        this.#ctx.fields({ partition: run.id, from: String(position), to: String(target) })
      )
      // What a former owner said it handled was said of the log before it moved.
      run.tracker.forgetInherited()
      if (target > position) run.tracker.advanceTo(target)
      else if (run.tracker.outstanding === 0 && run.inFlight === 0) run.tracker = new OffsetTracker(target)
    } catch (error) {
      if (this.#ctx.stopping()) return
      this.#ctx.options.log(
        'warn',
        'resetting an out-of-range position failed',
        this.#ctx.fields({ error, partition: run.id })
      )
      await sleep(1_000, this.#ctx.signal)
    } finally {
      run.resetting = false
      this.#ctx.wake.notify()
    }
  }

  /**
   * Whether no member of the group has the member id a draining mark names, as the coordinator describes the group
   * now. Then nothing of that hand-over can land (its commits are sent under that id only, and the coordinator takes
   * commits from current members), and nothing of it is on the wire: a member leaves its group
   * - by closing, which ends its hand-overs first;
   * - by its session timing out, 6 s after the coordinator last heard from it, at the latest when it was told of the
   *   revocation, while its drain ends 5 s after it was told (GONE_OWNER_WAIT_MS more is a margin for that answer's
   *   way);
   * - removed when its dispatcher is declared dead, which fenced half the liveness timeout before and cut its
   *   deliveries a quarter of it after that (`fencedDrainOf`).
   * False when the group cannot be described: the wait goes on.
   */
  async #goneFromGroup(
    memberId: string,
    checks: Map<string, { readonly at: number; readonly gone: boolean }>
  ): Promise<boolean> {
    // Asked at most every GONE_CHECK_MS per member id: the caller looks every 100 ms, for each partition waiting.
    const last = checks.get(memberId)
    if (last !== undefined && Date.now() - last.at < GONE_CHECK_MS) return last.gone
    let gone: boolean
    try {
      const identity = await this.#membership.identityNow()
      const view = await this.#ctx.options.committer.describe(identity.coordinator, this.#ctx.options.source.groupId)
      // This member is in the group, so it is neither Empty nor Dead; were it either, nothing is concluded.
      gone = view.state !== 'Dead' && view.state !== 'Empty' && !view.members.some(m => m.memberId === memberId)
    } catch (error) {
      // Not allowed to describe the group (an ACL), or the coordinator moving: the hand-over is waited out.
      this.#ctx.options.log(
        'info',
        'looking for a former owner in the group failed; waiting for its release',
        this.#ctx.fields({ error, memberId })
      )
      gone = false
    }
    checks.set(memberId, { at: Date.now(), gone })
    return gone
  }

  /** The group's committed offsets of some partitions, with their metadata, from the coordinator. */
  async #committedOffsets(runs: readonly PartitionRun[]): Promise<Map<string, CommittedOffset>> {
    const identity = await this.#membership.identityNow()
    return this.#ctx.options.committer.committed(identity.coordinator, this.#ctx.options.source.groupId, runs)
  }

  /** Where newly assigned partitions without a committed offset start: the log's start or end, as initialOffset says. */
  #initialPositions(runs: readonly PartitionRun[]): Promise<Map<PartitionRun, bigint>> {
    return this.#offsetsAt(
      runs,
      this.#ctx.options.source.initialOffset === 'earliest' ? EARLIEST_TIMESTAMP : LATEST_TIMESTAMP
    )
  }

  /** The partitions' earliest or latest (last stable) offsets. */
  async #offsetsAt(runs: readonly PartitionRun[], timestamp: bigint): Promise<Map<PartitionRun, bigint>> {
    const topics = [...new Set(runs.map(r => r.topic))]
    const partitions: Record<string, number[]> = {}
    for (const run of runs) (partitions[run.topic] ??= []).push(run.partition)
    const offsets = await this.#ctx.consumer.listOffsets({
      topics,
      partitions,
      timestamp,
      isolationLevel: IsolationLevels.READ_COMMITTED
    })
    const result = new Map<PartitionRun, bigint>()
    for (const run of runs) {
      const offset = offsets.get(run.topic)?.[run.partition]
      if (offset === undefined)
        throw new Error(`no ${timestamp === EARLIEST_TIMESTAMP ? 'earliest' : 'latest'} offset for ${run.id}`)
      result.set(run, offset)
    }
    return result
  }
}
