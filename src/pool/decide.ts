import type { SlotKind } from '../store/index.ts'

/** Slot counts of both kinds: consumer slots (KafkaSource vreplicas) and schedule slots (PingSource vreplicas). */
export type Slots = Readonly<Record<SlotKind, number>>

/** `--dispatchers MIN..MAX`: the pool never runs fewer than min nor more than max dispatchers. */
export interface PoolBounds {
  readonly min: number
  readonly max: number
}

/** A live dispatcher as the pool sees it. */
export interface PoolMember {
  /** `dispatcher-<ordinal>`. */
  readonly id: string
  readonly ordinal: number
  readonly capacity: Slots
  /** Vreplicas the scheduler has placed on it (its contract). */
  readonly placed: Slots
  /** Vreplicas it says it runs (its heartbeat): its contract is applied once both are 0. */
  readonly running: Slots
  /** Cordoned by a user (`shoal cordon`): its capacity does not count. */
  readonly cordoned: boolean
}

export interface PoolInput {
  readonly bounds: PoolBounds
  readonly members: readonly PoolMember[]
  /** Vreplicas pending because no dispatcher has a free slot (`InsufficientCapacity`): more dispatchers help. */
  readonly pendingForCapacity: Slots
  /** Vreplicas pending because a filter refused the free slots (`Unschedulable`): more dispatchers do not help. */
  readonly pendingUnschedulable: Slots
  /** The slots of a dispatcher the pool starts; absent: the largest live dispatcher's. */
  readonly capacity?: Slots
  /** The highest desired count of the stabilisation window (see `stabilize`): steps down wait for it. */
  readonly atLeast?: number
}

/** Why the pool has the size it has. */
export type PoolReason =
  | 'pending' // vreplicas wait for capacity: grow
  | 'compacting' // the load fits in fewer dispatchers: the highest ordinals are emptied, then stopped
  | 'steady' // the load fits the pool as it is
  | 'at-max' // vreplicas wait for capacity but the pool is at its maximum
  | 'stabilizing' // the load fits in fewer dispatchers, but not yet for the whole stabilisation window
  | 'at-min' // the pool holds its minimum

/** What the pool should be: one decision for `shoal up`'s supervisor and a Kubernetes StatefulSet alike. */
export interface PoolDecision {
  /** Dispatchers the load needs, within the bounds. */
  readonly desired: number
  /**
   * Dispatchers to run now: ordinals 0 … replicas−1. It is `desired`, plus the higher ordinals still being emptied
   * (a StatefulSet removes its highest ordinals first, so none is cut while it still holds vreplicas).
   */
  readonly replicas: number
  /** Live dispatchers at or above `desired`: the scheduler takes nothing new there and moves their vreplicas. */
  readonly draining: readonly string[]
  /** Live dispatchers at or above `replicas`: empty, to be stopped. */
  readonly removable: readonly string[]
  readonly reason: PoolReason
  /** For people: `3 consumer vreplicas pending for capacity; 10 consumer slots per dispatcher`. */
  readonly message: string
  /** Slots the load needs: placed plus pending for capacity. */
  readonly needed: Slots
  readonly pending: { readonly insufficientCapacity: Slots; readonly unschedulable: Slots }
  readonly bounds: PoolBounds
}

const KINDS: readonly SlotKind[] = ['consumer', 'schedule']

/**
 * The pool's size (DESIGN §7), pure: desired = clamp(max over slot kinds of ceil(needed / capacity per dispatcher),
 * min, max), where needed counts placed vreplicas and those pending for lack of capacity — never those a filter
 * refuses. While vreplicas wait for capacity the pool grows by at least one. When the load fits in fewer dispatchers,
 * the highest ordinals drain once the lower ones have the free slots to take what they hold; a drained dispatcher is
 * stopped only when its contract is empty and it says it runs nothing. While a filter refuses vreplicas, the pool
 * neither grows for them nor shrinks.
 */
export function decidePool(input: PoolInput): PoolDecision {
  const { bounds, members } = input
  const sum = (f: (m: PoolMember) => number) => members.reduce((n, m) => n + f(m), 0)
  const needed = bySlot(k => sum(m => m.placed[k]) + input.pendingForCapacity[k])
  const perDispatcher = bySlot(k => input.capacity?.[k] ?? Math.max(0, ...members.map(m => m.capacity[k])))
  const waiting = KINDS.some(k => input.pendingForCapacity[k] > 0)
  const live = members.length === 0 ? 0 : Math.max(...members.map(m => m.ordinal)) + 1
  let byLoad = 0
  for (const k of KINDS) {
    if (needed[k] === 0) continue
    // A kind no dispatcher offers yet: one more dispatcher, to learn its capacity.
    byLoad = Math.max(byLoad, perDispatcher[k] > 0 ? Math.ceil(needed[k] / perDispatcher[k]) : live + 1)
  }
  // Vreplicas waiting for capacity (on cordoned dispatchers' account, or a pool with holes): one more at least.
  if (waiting) byLoad = Math.max(byLoad, members.length + 1)
  // Vreplicas a filter refuses do not grow the pool, but it does not shrink under them either: moving more
  // vreplicas onto fewer dispatchers would only give the filter more to refuse.
  if (KINDS.some(k => input.pendingUnschedulable[k] > 0)) byLoad = Math.max(byLoad, live)
  const fitting = Math.min(bounds.max, Math.max(bounds.min, byLoad))
  const desired = Math.min(bounds.max, Math.max(fitting, input.atLeast ?? 0))

  const above = members.filter(m => m.ordinal >= desired)
  const below = members.filter(m => m.ordinal < desired && !m.cordoned)
  const free = bySlot(k => below.reduce((n, m) => n + Math.max(0, m.capacity[k] - m.placed[k]), 0))
  const held = bySlot(k => above.reduce((n, m) => n + m.placed[k], 0))
  // Emptying the highest ordinals moves their vreplicas: only when the dispatchers kept have room for them.
  const canDrain = KINDS.every(k => held[k] <= free[k])
  const isEmpty = (m: PoolMember) => KINDS.every(k => m.placed[k] === 0 && m.running[k] === 0)
  const draining = above.filter(m => canDrain || isEmpty(m))
  const highestBusy = Math.max(-1, ...above.filter(m => !isEmpty(m)).map(m => m.ordinal))
  const replicas = Math.min(Math.max(desired, highestBusy + 1), Math.max(bounds.max, highestBusy + 1))
  const removable = members.filter(m => m.ordinal >= replicas)

  const reason: PoolReason = waiting
    ? byLoad > bounds.max && desired <= members.length
      ? 'at-max'
      : 'pending'
    : desired > fitting
      ? 'stabilizing'
      : above.length > 0
        ? 'compacting'
        : byLoad < bounds.min
          ? 'at-min'
          : 'steady'
  return {
    desired,
    replicas,
    draining: draining.map(m => m.id),
    removable: removable.map(m => m.id),
    reason,
    message: messageOf(reason, input, needed, perDispatcher, desired, held, canDrain),
    needed,
    pending: { insufficientCapacity: input.pendingForCapacity, unschedulable: input.pendingUnschedulable },
    bounds
  }
}

function messageOf(
  reason: PoolReason,
  input: PoolInput,
  needed: Slots,
  perDispatcher: Slots,
  desired: number,
  held: Slots,
  canDrain: boolean
): string {
  const kinds = KINDS.filter(k => needed[k] > 0 || input.pendingForCapacity[k] > 0)
  const load = kinds.map(k => `${needed[k]} ${k} slots needed, ${perDispatcher[k]} per dispatcher`).join('; ')
  const refused = KINDS.filter(k => input.pendingUnschedulable[k] > 0)
    .map(k => `${input.pendingUnschedulable[k]} ${k} vreplicas refused by a filter (more dispatchers would not help)`)
    .join('; ')
  const parts: string[] = []
  switch (reason) {
    case 'pending':
      parts.push(
        `${KINDS.filter(k => input.pendingForCapacity[k] > 0)
          .map(k => `${input.pendingForCapacity[k]} ${k} vreplicas pending for capacity`)
          .join('; ')}: ${dispatchers(desired)}`
      )
      break
    case 'at-max':
      parts.push(`vreplicas pending for capacity, but the pool is at its maximum of ${input.bounds.max}`)
      break
    case 'compacting':
      parts.push(
        canDrain
          ? `the load fits in ${dispatchers(desired)}: emptying the ones above`
          : `the load fits in ${dispatchers(desired)}, but those have no room yet for the ${KINDS.map(k => `${held[k]} ${k}`).join(' and ')} vreplicas above: holding`
      )
      break
    case 'stabilizing':
      parts.push(`the load fits in fewer dispatchers; steps down wait for the stabilisation window`)
      break
    case 'at-min':
      parts.push(`the pool holds its minimum of ${input.bounds.min}`)
      break
    case 'steady':
      parts.push(`${dispatchers(desired)} fit the load`)
      break
  }
  if (load) parts.push(load)
  if (refused) parts.push(refused)
  return parts.join('; ')
}

function dispatchers(n: number): string {
  return n === 1 ? '1 dispatcher' : `${n} dispatchers`
}

function bySlot(f: (k: SlotKind) => number): Slots {
  return { consumer: f('consumer'), schedule: f('schedule') }
}

/**
 * Steps down wait: the pool shrinks to the highest `desired` of the last `windowMs` (each step moves vreplicas, a
 * group rebalance, so a dip must last). Steps up apply at once. Pure: `recent` is the caller's memory, oldest first.
 */
export function stabilize(
  recent: ReadonlyArray<{ readonly atMs: number; readonly desired: number }>,
  desired: number,
  nowMs: number,
  windowMs: number
): { readonly desired: number; readonly recent: ReadonlyArray<{ readonly atMs: number; readonly desired: number }> } {
  const kept = [...recent.filter(r => nowMs - r.atMs < windowMs), { atMs: nowMs, desired }]
  return { desired: Math.max(...kept.map(r => r.desired)), recent: kept }
}
