import { LeaderTerm } from './leader-term.ts'
import type { SchedulerLeaderOptions } from './options.ts'

/**
 * After its term was fenced, a replica that still owns bucket 0 takes the leadership again this long after —
 * long enough for its group membership to hear of a newer generation (heartbeats every second), if there is one.
 */
const RETAKE_AFTER_MS = 2_000

/**
 * Runs the scheduler on the replica that owns bucket 0 (DESIGN §4, §5). Each leadership is a term: it
 * opens the transactional id `<prefix>-scheduler` (fencing a deposed leader), rebuilds its state from the
 * placements and contracts in the log — no re-placing from scratch — and from then on writes placements and
 * contracts together, one transaction per pass, stamped with an epoch one above the highest in the log.
 */
export class SchedulerLeader {
  readonly #options: SchedulerLeaderOptions
  readonly #newTerm: (options: SchedulerLeaderOptions) => LeaderTerm
  #term: LeaderTerm | undefined
  #starting: Promise<void> | undefined
  #stopped = false
  #retry: NodeJS.Timeout | undefined
  readonly #onAssignment = () => this.#followDetached()

  /** `newTerm` makes each term (tests give their own). */
  constructor(
    options: SchedulerLeaderOptions,
    newTerm: (options: SchedulerLeaderOptions) => LeaderTerm = termOptions => new LeaderTerm(termOptions)
  ) {
    this.#options = options
    this.#newTerm = newTerm
  }

  start(): void {
    this.#options.store.onAssignment(this.#onAssignment)
    this.#followDetached()
  }

  /** Follows from a callback: a failed stop of the old term is logged, not an unhandled rejection. */
  #followDetached(): void {
    this.#follow().catch(error =>
      this.#options.log('error', 'following the scheduler leadership failed', { error: String(error) })
    )
  }

  async stop(): Promise<void> {
    this.#stopped = true
    clearTimeout(this.#retry)
    this.#options.store.offAssignment(this.#onAssignment)
    await this.#starting?.catch(() => undefined)
    await this.#term?.stop()
    this.#term = undefined
  }

  /** The current term, if this replica leads. */
  get term(): LeaderTerm | undefined {
    return this.#term
  }

  async #follow(): Promise<void> {
    await this.#starting?.catch(() => undefined)
    if (this.#stopped) return
    const leading = this.#options.store.isLeader
    if (leading && (!this.#term || this.#term.deposed)) {
      await this.#term?.stop()
      // A term can be fenced after the assignment that kept it (a replica paused past its session, given bucket 0
      // back on waking, finds on its first append that the owner of the generation it missed took the id): it
      // looks again then, or it would lead with no term until the next rebalance.
      const term = this.#newTerm({
        ...this.#options,
        onDeposed: () => setTimeout(() => this.#followDetached(), RETAKE_AFTER_MS).unref()
      })
      this.#term = term
      this.#starting = term.start().catch(async error => {
        // Kafka can refuse the transactional id for a while (a new cluster's transaction coordinator still
        // loading, a killed leader's transaction still being aborted): try again, or no replica would lead until
        // the next rebalance.
        this.#options.log('error', 'could not take the scheduler leadership; trying again', {
          error: String(error),
          retryInMs: RETAKE_AFTER_MS
        })
        if (this.#term === term) this.#term = undefined
        await term.stop().catch(() => undefined)
        clearTimeout(this.#retry)
        this.#retry = setTimeout(() => this.#followDetached(), RETAKE_AFTER_MS)
        this.#retry.unref()
      })
      await this.#starting
    } else if (!leading && this.#term) {
      const term = this.#term
      this.#term = undefined
      await term.stop()
    }
  }
}
