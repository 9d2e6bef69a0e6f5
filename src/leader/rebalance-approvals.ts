import { ErrorCodes, ShoalError } from '../errors/index.ts'
import type { RebalanceProposal, Scheduler } from '../scheduler/index.ts'

/**
 * The rebalance proposals a term shows and the approvals it takes: only the last proposal shown may be applied,
 * and only while the scheduler would still propose exactly it.
 */
export class RebalanceApprovals {
  /** The last proposal shown: the only one an approval may apply. */
  #proposal: RebalanceProposal | undefined

  /** The scheduler's proposal now, remembered as the one shown. */
  propose(scheduler: Pick<Scheduler, 'proposeRebalance'>): RebalanceProposal {
    this.#proposal = scheduler.proposeRebalance()
    return this.#proposal
  }

  /**
   * Applies the proposal served at `revision` to the scheduler, exactly as it was shown; refuses it when the
   * scheduler has moved on since — placements changed, or the pool did, so that the proposal now would be another
   * one. Returns the sources whose placements it changed, for the term to write.
   */
  approve(
    scheduler: Pick<Scheduler, 'proposeRebalance' | 'applyRebalance'>,
    revision: number
  ): { readonly moved: number; readonly changed: string[] } {
    const now = scheduler.proposeRebalance()
    const shown = this.#proposal
    if (now.revision !== revision || !shown || shown.revision !== revision || !sameMoves(shown, now)) {
      throw new ShoalError(
        ErrorCodes.CONFLICT,
        `the proposal of revision ${revision} is stale: placements or the pool changed since (the scheduler is at revision ${now.revision}); look at the new proposal and approve that`
      )
    }
    const result = scheduler.applyRebalance(shown)
    this.#proposal = undefined
    return { moved: shown.moves.length, changed: result.changes.map(c => c.key) }
  }
}

function sameMoves(a: RebalanceProposal, b: RebalanceProposal): boolean {
  return JSON.stringify(a.moves) === JSON.stringify(b.moves)
}
