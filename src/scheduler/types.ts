import type { SlotKind } from '../store/index.ts'

/** Whether a dispatcher takes new vreplicas: `cordoned` and `draining` ones are emptied, like dead ones. */
export type DispatcherState = 'ready' | 'cordoned' | 'draining'

/** A live dispatcher as the scheduler sees it (dead ones are simply absent from the list). */
export interface DispatcherInfo {
  /** `dispatcher-<ordinal>`. */
  readonly id: string
  readonly ordinal: number
  readonly zone: string
  readonly node: string
  /** Consumer slots (KafkaSource vreplicas: group members) and schedule slots (PingSource vreplicas: cron entries). */
  readonly capacity: Readonly<Record<SlotKind, number>>
  readonly state: DispatcherState
}

/** A source as the scheduler sees it. */
export interface VPod {
  /** `KafkaSource/ns/name`. */
  readonly key: string
  /** The capacity it uses: `consumer` for a KafkaSource, `schedule` for a PingSource. */
  readonly slot: SlotKind
  /** How many vreplicas it wants. */
  readonly vreplicas: number
  /** The partition count of its topics: NoMaxResourceCount caps vreplicas to it. */
  readonly maxVReplicas?: number
}

/** Some of one source's vreplicas on one dispatcher. */
export interface Placement {
  readonly podName: string
  readonly vreplicas: number
}

/**
 * Why vreplicas wait. `InsufficientCapacity`: no schedulable dispatcher has a free slot of the kind (the pool
 * autoscaler counts these). `Unschedulable`: slots are free but a filter plugin refused every one of them.
 */
export type PendingReason = 'InsufficientCapacity' | 'Unschedulable'

/** Vreplicas of a source that could not be placed, and why (condition `Scheduled=False`). */
export interface PendingInfo {
  readonly count: number
  readonly reason: PendingReason
  /** For people: `insufficient consumer capacity: 3 of 10 vreplicas unplaced`. */
  readonly message: string
}

/** A source whose placements or pending vreplicas changed. */
export interface VPodChange {
  readonly key: string
  readonly slot: SlotKind
  /** True when the source was removed: `placements` is empty and its contracts should go. */
  readonly deleted: boolean
  /** The vreplicas the scheduler aims at: desired, capped by filter limits (NoMaxResourceCount). */
  readonly target: number
  /** Sorted by dispatcher ordinal. */
  readonly placements: readonly Placement[]
  /** The placements before this change, so a caller can tombstone the contracts that went. */
  readonly previous: readonly Placement[]
  readonly pending: PendingInfo | undefined
}

/** What one pass (or an applied rebalance, or a restore) did. */
export interface PassStats {
  /** Sources the pass examined: changed ones, those on lost dispatchers, pending ones retried. */
  readonly recomputed: number
  /** Sources whose placements or pending changed. */
  readonly changed: number
  /** Vreplicas placed and removed by the pass (a move counts once in each). */
  readonly placed: number
  readonly removed: number
  /** Vreplicas pending across all sources after the pass. */
  readonly pending: number
  readonly durationMs: number
}

/** The outcome of `schedule()` or `applyRebalance()`. */
export interface PassResult {
  /** The scheduler's revision after the pass; it grows whenever placements change. */
  readonly revision: number
  readonly changes: readonly VPodChange[]
  readonly stats: PassStats
}

/** Some vreplicas of one source moved from one dispatcher to another. */
export interface Move {
  readonly source: string
  readonly from: string
  readonly to: string
  readonly vreplicas: number
}

/** Moves that raise the balancedness score, computed from one revision; apply with `applyRebalance`. */
export interface RebalanceProposal {
  readonly revision: number
  readonly scoreBefore: number
  readonly scoreAfter: number
  readonly moves: readonly Move[]
}

/** The parts of the balancedness score, each 0–100 (see docs/scheduler.md). */
export interface Balancedness {
  readonly score: number
  readonly zoneSpread: number
  readonly nodeSpread: number
  readonly load: number
}

/** Totals, for the pool autoscaler and dashboards. */
export interface SchedulerSummary {
  readonly sources: number
  readonly dispatchers: number
  readonly capacity: Readonly<Record<SlotKind, number>>
  readonly used: Readonly<Record<SlotKind, number>>
  /** Vreplicas pending because no slot of the kind is free (what more dispatchers would fix). */
  readonly pendingForCapacity: Readonly<Record<SlotKind, number>>
  /** Vreplicas pending because a filter refused the free slots. */
  readonly pendingUnschedulable: Readonly<Record<SlotKind, number>>
}
