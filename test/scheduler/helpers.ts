import assert from 'node:assert/strict'
import type { SlotKind } from '../../src/store/index.ts'
import type { DispatcherInfo, DispatcherState, Placement, Scheduler, VPod } from '../../src/scheduler/index.ts'

export function dispatcher(
  ordinal: number,
  zone: string,
  node = `${zone}-node`,
  consumer = 10,
  schedule = 10,
  state: DispatcherState = 'ready'
): DispatcherInfo {
  return { id: `dispatcher-${ordinal}`, ordinal, zone, node, capacity: { consumer, schedule }, state }
}

/** `zones` zones named a, b, c…, `nodes` nodes per zone, `perNode` dispatchers per node; ordinals round-robin over zones. */
export function pool(zones: number, nodes: number, perNode: number, consumer = 10, schedule = 10): DispatcherInfo[] {
  const out: DispatcherInfo[] = []
  const count = zones * nodes * perNode
  for (let i = 0; i < count; i++) {
    const zone = String.fromCharCode(97 + (i % zones))
    const node = `${zone}${Math.floor(i / zones) % nodes}`
    out.push(dispatcher(i, zone, node, consumer, schedule))
  }
  return out
}

export function kafka(name: string, vreplicas: number, maxVReplicas?: number): VPod {
  return {
    key: `KafkaSource/default/${name}`,
    slot: 'consumer',
    vreplicas,
    ...(maxVReplicas === undefined ? {} : { maxVReplicas })
  }
}

export function ping(name: string): VPod {
  return { key: `PingSource/default/${name}`, slot: 'schedule', vreplicas: 1 }
}

/** Placements as a map podName → vreplicas. */
export function asMap(placements: readonly Placement[] | undefined): Map<string, number> {
  return new Map((placements ?? []).map(p => [p.podName, p.vreplicas]))
}

export function total(placements: readonly Placement[] | undefined): number {
  return (placements ?? []).reduce((sum, p) => sum + p.vreplicas, 0)
}

export function zonesOf(
  placements: readonly Placement[] | undefined,
  byId: ReadonlyMap<string, DispatcherInfo>
): Set<string> {
  return new Set((placements ?? []).map(p => byId.get(p.podName)?.zone ?? '?'))
}

export const slotOf = (v: VPod): SlotKind => v.slot

/** Use of each dispatcher by slot kind, summed from every source's placements. */
export function usage(scheduler: Scheduler, vpods: Iterable<VPod>): Map<string, Record<SlotKind, number>> {
  const used = new Map<string, Record<SlotKind, number>>()
  for (const v of vpods) {
    for (const p of scheduler.placements(v.key) ?? []) {
      const u = used.get(p.podName) ?? { consumer: 0, schedule: 0 }
      u[v.slot] += p.vreplicas
      used.set(p.podName, u)
    }
  }
  return used
}

/**
 * What must hold after every pass: capacity never exceeded and only schedulable dispatchers used; placed plus
 * pending is the target (desired capped at maxVReplicas); pending only when no slot of the kind is free; no
 * source of two or more vreplicas all in one zone while another zone has a free slot of its kind.
 */
export function checkInvariants(
  scheduler: Scheduler,
  dispatchers: readonly DispatcherInfo[],
  vpods: Iterable<VPod>
): void {
  const sources = [...vpods]
  const byId = new Map(dispatchers.map(d => [d.id, d]))
  const used = usage(scheduler, sources)
  const free = (d: DispatcherInfo, slot: SlotKind) =>
    d.state === 'ready' ? d.capacity[slot] - (used.get(d.id)?.[slot] ?? 0) : 0
  for (const [id, u] of used) {
    const d = byId.get(id)
    assert.ok(d !== undefined && d.state === 'ready', `vreplicas on ${id}, which is not a ready dispatcher`)
    for (const slot of ['consumer', 'schedule'] as const) {
      assert.ok(u[slot] <= d.capacity[slot], `${id} runs ${u[slot]} ${slot} vreplicas, capacity ${d.capacity[slot]}`)
    }
  }
  const freeIn = (slot: SlotKind, zone?: string) =>
    dispatchers
      .filter(d => zone === undefined || d.zone !== zone)
      .reduce((sum, d) => sum + Math.max(0, free(d, slot)), 0)
  for (const v of sources) {
    const placements = scheduler.placements(v.key)
    assert.ok(placements !== undefined, `${v.key} is unknown to the scheduler`)
    const placed = total(placements)
    const pending = scheduler.pending(v.key)
    const target = Math.min(v.vreplicas, v.maxVReplicas ?? Number.POSITIVE_INFINITY)
    assert.equal(
      placed + (pending?.count ?? 0),
      target,
      `${v.key}: placed ${placed} + pending ${pending?.count} ≠ ${target}`
    )
    for (const p of placements) assert.ok(p.vreplicas > 0, `${v.key} has an empty placement`)
    if (pending !== undefined) {
      assert.ok(pending.count > 0)
      assert.equal(pending.reason, 'InsufficientCapacity')
      assert.match(
        pending.message,
        new RegExp(`^insufficient ${v.slot} capacity: ${pending.count} of ${target} vreplicas unplaced$`)
      )
      assert.equal(freeIn(v.slot), 0, `${v.key} has ${pending.count} pending while ${v.slot} slots are free`)
    }
    const zones = zonesOf(placements, byId)
    if (placed >= 2 && zones.size === 1) {
      const [zone] = zones
      assert.equal(freeIn(v.slot, zone), 0, `${v.key} sits all in zone ${zone} while another zone has room`)
    }
  }
}
