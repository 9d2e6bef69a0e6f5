import { defineScore } from '../plugin.ts'
import type { Candidate, PlacementContext, ScorePlugin } from '../plugin.ts'

/** The availability rule at every level: 1 for the candidate holding the fewest of the source, 1/2 for one more, … */
function fewestPlacedFirst(candidate: Candidate, context: PlacementContext): number {
  return 1 / (1 + candidate.placed - context.minPlaced)
}

/** Prefers the zone holding the fewest of the source's vreplicas: 1 for the fewest, 1/2 for one more, … */
export const AvailabilityZonePriority: ScorePlugin = defineScore({
  name: 'AvailabilityZonePriority',
  levels: ['zone'],
  score: fewestPlacedFirst
})

/** Prefers the node (within the chosen zone) holding the fewest of the source's vreplicas. */
export const AvailabilityNodePriority: ScorePlugin = defineScore({
  name: 'AvailabilityNodePriority',
  levels: ['node'],
  score: fewestPlacedFirst
})

/**
 * Prefers low ordinals, so high ordinals empty and the pool can shrink: the zone and the node holding the lowest
 * free ordinal, then that dispatcher. Scores fall linearly from 1 (ordinal 0) towards 0 (the highest ordinal).
 */
export const LowestOrdinalPriority: ScorePlugin = defineScore({
  name: 'LowestOrdinalPriority',
  score: (candidate, context) => 1 - candidate.lowestOrdinal / (context.maxOrdinal + 1)
})
