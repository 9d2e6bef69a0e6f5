import { defineRemoval } from '../plugin.ts'
import type { RemovalPlugin } from '../plugin.ts'

/** Removes from the zone holding the most of the source's vreplicas first. */
export const RemoveWithAvailabilityZonePriority: RemovalPlugin = defineRemoval({
  name: 'RemoveWithAvailabilityZonePriority',
  score: (candidate, context) => 1 / (1 + context.maxInZone - candidate.placedInZone)
})

/** Removes from the node holding the most of the source's vreplicas first. */
export const RemoveWithAvailabilityNodePriority: RemovalPlugin = defineRemoval({
  name: 'RemoveWithAvailabilityNodePriority',
  score: (candidate, context) => 1 / (1 + context.maxInNode - candidate.placedInNode)
})

/** Removes from the highest ordinal first, so high ordinals empty and the pool can shrink. */
export const RemoveWithHighestOrdinalPriority: RemovalPlugin = defineRemoval({
  name: 'RemoveWithHighestOrdinalPriority',
  score: (candidate, context) => (candidate.ordinal + 1) / (context.maxOrdinal + 1)
})

/** Removes from the dispatcher holding the most of the source's vreplicas first. */
export const RemoveWithEvenPodSpreadPriority: RemovalPlugin = defineRemoval({
  name: 'RemoveWithEvenPodSpreadPriority',
  score: (candidate, context) => 1 / (1 + context.maxOnDispatcher - candidate.placed)
})
