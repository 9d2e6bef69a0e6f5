import type { AutoscaleConfig } from './annotations.ts'

/** What one poll learnt about a source's lag. */
export type LagObservation =
  | {
      readonly kind: 'lag'
      /** Sum over partitions of (last stable offset − committed offset), never negative. */
      readonly totalLag: number
      /** Partitions of the source's topics: more consumers than this would idle. */
      readonly partitions: number
    }
  | { readonly kind: 'unreadable'; readonly reason: string }

/** The autoscaler's memory of one source between polls. */
export interface ScaleState {
  /** The vreplicas the scheduler is given. */
  readonly scale: number
  /** When lag was last above the activation threshold (or when the autoscaler started following the source). */
  readonly lastActiveMs: number
  /** Recommendations inside the stabilisation window, oldest first. */
  readonly recent: ReadonlyArray<{ readonly atMs: number; readonly value: number }>
}

/** Why the scale is what it is after a poll. */
export type ScaleReason =
  | 'lag' // follows ceil(lag / threshold) within [min, min(max, partitions)]
  | 'activated' // lag above the activation threshold: at least one consumer at once
  | 'stabilizing' // a step down waits for the stabilisation window
  | 'cooling-down' // idle, but not yet for the cooldown period
  | 'idle' // idle for the cooldown period: min-scale
  | 'held' // lag could not be read: the scale holds

/** What `decide` returns: the autoscaler's next state and why (not auth's allow/deny Decision). */
export interface ScaleDecision {
  readonly state: ScaleState
  readonly reason: ScaleReason
  /** Why the lag could not be read, when reason is `held`. */
  readonly message?: string
}

/** The state of a source the autoscaler starts following: at `scale` (from the log, or min-scale when new). */
export function initialState(scale: number, nowMs: number): ScaleState {
  return { scale, lastActiveMs: nowMs, recent: [] }
}

/**
 * One poll's decision, KEDA's semantics without its HPA round trip (pure: no clock, no I/O).
 *
 * - lag above the activation threshold → at least 1, and ceil(lag / lagThreshold) clamped to
 *   [min-scale, min(max-scale, partitions)]; steps up apply at once;
 * - steps down between non-zero scales take the highest recommendation of the stabilisation window, so each
 *   group rebalance a step costs is earned;
 * - idle (lag at or below the activation threshold) for the cooldown period → min-scale; before that the
 *   source keeps at least one consumer;
 * - lag that cannot be read → the scale holds.
 */
export function decide(
  config: AutoscaleConfig,
  state: ScaleState,
  observation: LagObservation,
  nowMs: number
): ScaleDecision {
  if (observation.kind === 'unreadable') {
    return { state, reason: 'held', message: observation.reason }
  }
  const cap = Math.min(config.maxScale, observation.partitions > 0 ? observation.partitions : config.maxScale)
  const floor = Math.min(config.minScale, cap)
  const raw = Math.ceil(observation.totalLag / config.lagThreshold)
  const active = observation.totalLag > config.activationLagThreshold
  const lastActiveMs = active ? nowMs : state.lastActiveMs
  const windowStart = nowMs - config.stabilizationWindowMs
  const keep = (target: number) => [...state.recent.filter(r => r.atMs > windowStart), { atMs: nowMs, value: target }]

  if (!active && (state.scale === 0 || nowMs - lastActiveMs >= config.cooldownPeriodMs)) {
    // Idle for the cooldown (or never woken): min-scale, at once.
    return { state: { scale: floor, lastActiveMs, recent: [] }, reason: 'idle' }
  }
  const target = clamp(Math.max(raw, 1), Math.max(floor, 1), cap)
  const recent = keep(target)
  if (target >= state.scale) {
    const reason: ScaleReason = state.scale === 0 ? 'activated' : active ? 'lag' : 'cooling-down'
    return { state: { scale: target, lastActiveMs, recent }, reason }
  }
  // A step down between non-zero scales: the highest recommendation of the window, never above the cap.
  const stabilized = Math.min(cap, Math.max(...recent.map(r => r.value)))
  const scale = Math.min(state.scale, stabilized)
  const reason: ScaleReason = scale > target ? 'stabilizing' : active ? 'lag' : 'cooling-down'
  return { state: { scale, lastActiveMs, recent }, reason }
}

function clamp(value: number, low: number, high: number): number {
  return Math.max(Math.min(value, high), Math.min(low, high))
}
