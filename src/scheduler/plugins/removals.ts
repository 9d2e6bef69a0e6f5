import { defineRemoval } from '../plugin.ts'
import type { RemovalCandidate, RemovalContext, RemovalPlugin } from '../plugin.ts'

/** The availability rule at every level: 1 for the candidate holding the most of the source, 1/2 for one fewer, … */
function mostPlacedFirst(candidate: RemovalCandidate, context: RemovalContext): number {
  return 1 / (1 + context.maxPlaced - candidate.placed)
}

/** Removes from the zone holding the most of the source's vreplicas first: 1 for the most, 1/2 for one fewer, … */
export const RemoveWithAvailabilityZonePriority: RemovalPlugin = defineRemoval({
  name: 'RemoveWithAvailabilityZonePriority',
  levels: ['zone'],
  score: mostPlacedFirst
})

/** Removes from the node (within the chosen zone) holding the most of the source's vreplicas first. */
export const RemoveWithAvailabilityNodePriority: RemovalPlugin = defineRemoval({
  name: 'RemoveWithAvailabilityNodePriority',
  levels: ['node'],
  score: mostPlacedFirst
})

/**
 * Removes from the highest ordinal first, so high ordinals empty and the pool can shrink: the zone and the node
 * holding the source on the highest ordinal, then that dispatcher. Scores rise linearly with the ordinal, to 1.
 */
export const RemoveWithHighestOrdinalPriority: RemovalPlugin = defineRemoval({
  name: 'RemoveWithHighestOrdinalPriority',
  score: (candidate, context) => (candidate.highestOrdinal + 1) / (context.maxOrdinal + 1)
})

/** Removes from the dispatcher (on the chosen node) holding the most of the source's vreplicas first. */
export const RemoveWithEvenPodSpreadPriority: RemovalPlugin = defineRemoval({
  name: 'RemoveWithEvenPodSpreadPriority',
  levels: ['dispatcher'],
  score: mostPlacedFirst
})
