import { defineFilter } from '../plugin.ts'
import type { FilterPlugin } from '../plugin.ts'

/**
 * Keeps candidates with a free slot of the source's kind. The core never offers a full candidate anyway (capacity
 * is never exceeded, whatever the config), so listing it only states the intent, as in Knative's configs.
 */
export const PodFitsResources: FilterPlugin = defineFilter({
  name: 'PodFitsResources',
  filter: candidate => candidate.free > 0
})

/**
 * Caps a source's vreplicas at its topics' partition count (`maxVReplicas`): a consumer-group member beyond the
 * partition count would sit idle. The vreplicas above the cap are neither placed nor pending.
 */
export const NoMaxResourceCount: FilterPlugin = defineFilter({
  name: 'NoMaxResourceCount',
  levels: [],
  filter: () => true,
  limit: vpod => vpod.maxVReplicas ?? Number.POSITIVE_INFINITY
})

/** Arguments of EvenPodSpread. */
export interface EvenPodSpreadArgs {
  /** The most the source's vreplicas on one candidate may exceed the fewest on another (at least 1). */
  readonly maxSkew: number
}

/**
 * Refuses a candidate when one more vreplica there would make it hold more than `maxSkew` above the candidate of
 * the same level holding the fewest of the source's vreplicas: zones, nodes in a zone, dispatchers on a node.
 * Candidates without a free slot do not count (as in Knative), so it never refuses every candidate.
 */
export const EvenPodSpread: FilterPlugin<EvenPodSpreadArgs> = defineFilter<EvenPodSpreadArgs>({
  name: 'EvenPodSpread',
  args: {
    schema: {
      type: 'object',
      properties: { maxSkew: { type: 'integer', minimum: 1 } },
      additionalProperties: false
    },
    defaults: { maxSkew: 1 }
  },
  filter: (candidate, context, args) => candidate.placed + 1 - context.minPlaced <= args.maxSkew
})
