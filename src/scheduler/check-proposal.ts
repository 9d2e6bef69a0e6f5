import { ErrorCodes, ShoalError } from '../errors/index.ts'
import { SLOT_KINDS } from './topology.ts'
import type { Topology } from './topology.ts'
import type { RebalanceProposal } from './types.ts'
import type { VPodState } from './vpod-state.ts'

/** Per source, the change of its vreplicas on each slot. */
export type SourceDeltas = Map<VPodState, Map<number, number>>

/**
 * The net change a proposal makes to each source, checked against the end state before anything moves: throws
 * SHOAL_CONFLICT when a source or dispatcher is gone, a move takes more than a source holds, or a dispatcher would
 * go over capacity. Does not check the revision.
 */
export function checkProposal(
  topo: Topology,
  vpods: ReadonlyMap<string, VPodState>,
  proposal: RebalanceProposal
): SourceDeltas {
  const delta: SourceDeltas = new Map()
  const slotDelta: [Map<number, number>, Map<number, number>] = [new Map<number, number>(), new Map<number, number>()]
  for (const move of proposal.moves) {
    const v = vpods.get(move.source)
    const from = topo.slot(move.from)
    const to = topo.slot(move.to)
    const problem =
      v === undefined || v.deleted || v.orphan
        ? 'the source is gone'
        : from === undefined || to === undefined || !topo.schedulable[to]
          ? 'a dispatcher is gone or not schedulable'
          : !Number.isSafeInteger(move.vreplicas) || move.vreplicas <= 0
            ? 'vreplicas must be a positive integer'
            : undefined
    if (problem !== undefined || v === undefined || from === undefined || to === undefined) {
      throw new ShoalError(
        ErrorCodes.CONFLICT,
        `rebalance move of ${move.source} from ${move.from} to ${move.to}: ${problem}`
      )
    }
    const d = delta.get(v) ?? new Map<number, number>()
    delta.set(v, d)
    addTo(d, from, -move.vreplicas)
    addTo(d, to, move.vreplicas)
    addTo(slotDelta[v.kind], from, -move.vreplicas)
    addTo(slotDelta[v.kind], to, move.vreplicas)
  }
  for (const [v, d] of delta) {
    for (const [s, change] of d) {
      if (v.countOn(s) + change < 0) {
        throw new ShoalError(
          ErrorCodes.CONFLICT,
          `rebalance moves more of ${v.key} off ${topo.ids[s]} than it holds there`
        )
      }
    }
  }
  for (const k of [0, 1] as const) {
    for (const [s, change] of slotDelta[k]) {
      if (change > 0 && topo.used[k][s]! + change > topo.cap[k][s]!) {
        throw new ShoalError(
          ErrorCodes.CONFLICT,
          `rebalance would put ${topo.ids[s]} over its ${SLOT_KINDS[k]} capacity`
        )
      }
    }
  }
  return delta
}

function addTo(counts: Map<number, number>, s: number, c: number): void {
  counts.set(s, (counts.get(s) ?? 0) + c)
}
