import { deepFreeze } from '../util/index.ts'

/**
 * The shipped scheduler profiles, as the plain data a YAML config file would hold (docs/scheduler.md shows them
 * as YAML). Kept as constants so a built Shoal needs no data files.
 *
 * Weights are chosen so that the priorities act in order: a difference of one vreplica at a higher priority
 * (worth at least weight/2) outweighs everything the lower priorities can add up to.
 */
export const SCHEDULER_PROFILES = deepFreeze({
  /** The default: spread each source across zones, then nodes, then dispatchers; prefer low ordinals. */
  ha: {
    filters: [
      { name: 'PodFitsResources' },
      { name: 'NoMaxResourceCount' },
      { name: 'EvenPodSpread', args: { maxSkew: 1 } }
    ],
    scores: [
      { name: 'AvailabilityZonePriority', weight: 20 },
      { name: 'AvailabilityNodePriority', weight: 4 },
      { name: 'LowestOrdinalPriority', weight: 1 }
    ],
    removals: [
      { name: 'RemoveWithAvailabilityZonePriority', weight: 20 },
      { name: 'RemoveWithAvailabilityNodePriority', weight: 4 },
      { name: 'RemoveWithHighestOrdinalPriority', weight: 1 }
    ],
    balancedness: { zoneSpread: 4, nodeSpread: 3, load: 3 }
  },
  /**
   * Fill the lowest ordinals, so the pool can shrink (a laptop, a small pool). Capacity is still never exceeded,
   * and the scheduler still keeps a source of two or more vreplicas in two zones when it can.
   */
  compact: {
    filters: [{ name: 'PodFitsResources' }, { name: 'NoMaxResourceCount' }],
    scores: [{ name: 'LowestOrdinalPriority', weight: 1 }],
    removals: [
      { name: 'RemoveWithAvailabilityZonePriority', weight: 20 },
      { name: 'RemoveWithHighestOrdinalPriority', weight: 1 }
    ],
    balancedness: { zoneSpread: 1, nodeSpread: 1, load: 0 }
  }
})

/** The name of a shipped profile. */
export type SchedulerProfileName = keyof typeof SCHEDULER_PROFILES

/** The profile used when none is named. */
export const DEFAULT_PROFILE: SchedulerProfileName = 'ha'

/** Whether a name is one of the shipped profiles (`ha`, `compact`). */
export function isProfileName(name: string): name is SchedulerProfileName {
  return Object.hasOwn(SCHEDULER_PROFILES, name)
}
