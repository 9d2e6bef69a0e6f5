import type { BalancednessWeights } from './config.ts'
import { NONE } from './topology.ts'
import type { Topology } from './topology.ts'
import type { Balancedness } from './types.ts'
import type { VPodState } from './vpod-state.ts'

/**
 * The balancedness score (docs/scheduler.md): three shares of vreplicas that sit where they should, weighted.
 *
 * - zone spread: 1 − (vreplicas above ⌈n / zones⌉ in some zone) / (all vreplicas), summed over sources, where
 *   `zones` counts the zones with schedulable capacity of the source's kind;
 * - node spread: the same with nodes;
 * - load: 1 − Σ |used − fair share| / (2 × used), where a dispatcher's fair share is its capacity times the pool's
 *   utilisation: the share of vreplicas that would have to move for load to be proportional to capacity.
 */
export function computeBalancedness(
  topo: Topology,
  vpods: Iterable<VPodState>,
  weights: BalancednessWeights
): Balancedness {
  const zoneCount = new Int32Array(topo.zoneNames.length)
  const nodeCount = new Int32Array(topo.nodeNames.length)
  let total = 0
  let zoneExcess = 0
  let nodeExcess = 0
  for (const v of vpods) {
    if (v.deleted || v.placed === 0) continue
    let n = 0
    for (let i = 0; i < v.slots.length; i++) {
      const s = v.slots[i]!
      const z = topo.zoneOf[s]!
      if (z === NONE) continue
      const c = v.counts[i]!
      n += c
      zoneCount[z]! += c
      nodeCount[topo.nodeOf[s]!]! += c
    }
    if (n === 0) continue
    total += n
    const idealZone = Math.ceil(n / Math.max(1, topo.schedulableZones[v.kind]))
    const idealNode = Math.ceil(n / Math.max(1, topo.schedulableNodes[v.kind]))
    for (const s of v.slots) {
      const z = topo.zoneOf[s]!
      if (z === NONE) continue
      const node = topo.nodeOf[s]!
      if (zoneCount[z]! > idealZone) zoneExcess += zoneCount[z]! - idealZone
      if (nodeCount[node]! > idealNode) nodeExcess += nodeCount[node]! - idealNode
      zoneCount[z] = 0
      nodeCount[node] = 0
    }
  }
  let deviation = 0
  let used = 0
  for (const k of [0, 1] as const) {
    const capacity = topo.totalCap[k]
    let usedK = 0
    for (let s = 0; s < topo.slotCount; s++) if (topo.schedulable[s] === true) usedK += topo.used[k][s]!
    if (capacity === 0 || usedK === 0) continue
    const utilisation = usedK / capacity
    for (let s = 0; s < topo.slotCount; s++) {
      if (topo.schedulable[s] !== true) continue
      deviation += Math.abs(topo.used[k][s]! - topo.cap[k][s]! * utilisation)
    }
    used += usedK
  }
  const zoneSpread = total === 0 ? 1 : 1 - zoneExcess / total
  const nodeSpread = total === 0 ? 1 : 1 - nodeExcess / total
  const load = used === 0 ? 1 : Math.max(0, 1 - deviation / (2 * used))
  const weightSum = weights.zoneSpread + weights.nodeSpread + weights.load
  const score = (weights.zoneSpread * zoneSpread + weights.nodeSpread * nodeSpread + weights.load * load) / weightSum
  return {
    score: round(100 * score),
    zoneSpread: round(100 * zoneSpread),
    nodeSpread: round(100 * nodeSpread),
    load: round(100 * load)
  }
}

function round(x: number): number {
  return Math.round(x * 100) / 100
}
