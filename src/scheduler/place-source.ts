import { NO_CAPACITY } from './placer.ts'
import type { PlaceFailure, Placer } from './placer.ts'
import type { ResolvedPlugins } from './resolve-plugins.ts'
import { NONE } from './topology.ts'
import type { Topology } from './topology.ts'
import type { PendingInfo, VPod } from './types.ts'
import { samePending } from './vpod-state.ts'
import type { VPodState } from './vpod-state.ts'
import { isConcentrated } from './waiting.ts'
import type { WaitingSources } from './waiting.ts'

/** What a pass works on, one source at a time. */
export interface PassParts {
  readonly topo: Topology
  readonly placer: Placer
  readonly plugins: ResolvedPlugins
  readonly waiting: WaitingSources
}

/**
 * Frees what must go: all of a deleted source, vreplicas on lost dispatchers, the surplus after a shrink. Sets the
 * source's target; returns the vreplicas removed.
 */
export function releaseSource({ topo, placer, plugins }: PassParts, v: VPodState): number {
  const before = v.placed
  if (v.deleted) {
    for (let i = v.slots.length - 1; i >= 0; i--) placer.remove(v, v.slots[i]!, v.counts[i]!)
    v.pending = undefined
    return before
  }
  const k = v.kind
  for (let i = v.slots.length - 1; i >= 0; i--) {
    const s = v.slots[i]!
    if (!topo.schedulable[s]) placer.remove(v, s, v.counts[i]!)
    else {
      const over = topo.used[k][s]! - topo.cap[k][s]!
      if (over > 0) placer.remove(v, s, over)
    }
  }
  if (v.orphan) return before - v.placed
  v.target = targetOf(plugins, v.vpod)
  if (v.placed > v.target) {
    placer.load(v)
    while (v.placed > v.target) placer.remove(v, placer.chooseRemoval(v), 1)
    placer.unload(v)
  }
  return before - v.placed
}

/** Places a source up to its target, and restores its availability; returns [placed, removed]. */
export function placeSource(parts: PassParts, v: VPodState): [number, number] {
  if (v.deleted || v.orphan) return [0, 0]
  const { topo, placer } = parts
  const k = v.kind
  const before = v.placed
  let failure = NO_CAPACITY
  let moved = 0
  const need = v.target - v.placed
  const concentrated = v.placed >= 2 && isConcentrated(topo, v)
  // With nothing free anywhere, the failure is known without a descent.
  if (need > 0 ? topo.totalFree[k] > 0 : concentrated && topo.schedulableZones[k] >= 2) {
    placer.load(v)
    while (v.placed < v.target) {
      const result = placer.placeOne(v)
      if (result.kind !== 'placed') {
        failure = result
        break
      }
      placer.add(v, result.slot, 1)
    }
    moved = moveToSecondZone(topo, placer, v)
    placer.unload(v)
  }
  const pending = v.target - v.placed
  const info = pending > 0 ? pendingInfo(v, pending, failure) : undefined
  if (!samePending(v.pending, info)) v.pending = info
  parts.waiting.track(v, pending)
  return [v.placed - before + moved, moved]
}

/** Moves one vreplica of a loaded source that sits all in one zone to another zone with room; 1 when it did. */
function moveToSecondZone(topo: Topology, placer: Placer, v: VPodState): number {
  const sole = v.placed >= 2 ? placer.soleZone() : NONE
  if (sole === NONE || topo.schedulableZones[v.kind] < 2) return 0
  const result = placer.placeOne(v, { zone: z => z !== sole })
  if (result.kind !== 'placed') return 0
  placer.add(v, result.slot, 1)
  placer.remove(
    v,
    placer.chooseRemoval(v, r => topo.zoneOf[r] === sole),
    1
  )
  return 1
}

function pendingInfo(v: VPodState, count: number, failure: PlaceFailure): PendingInfo {
  const slot = v.vpod.slot
  const tail = `${count} of ${v.target} vreplicas unplaced`
  if (failure.kind === 'refused') {
    const by = failure.filter ?? 'the filters'
    return { count, reason: 'Unschedulable', message: `no dispatcher with free ${slot} slots passes ${by}: ${tail}` }
  }
  return { count, reason: 'InsufficientCapacity', message: `insufficient ${slot} capacity: ${tail}` }
}

/** Desired vreplicas, capped by the filters' limits. */
function targetOf(plugins: ResolvedPlugins, vpod: VPod): number {
  let target = vpod.vreplicas
  for (const f of plugins.limits) target = Math.min(target, Math.max(0, Math.floor(f.plugin.limit!(vpod, f.args))))
  return target
}
