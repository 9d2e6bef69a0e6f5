/**
 * A benchmark baseline, not product code: a scheduler written the way Knative's eventing scheduler
 * (`pkg/scheduler/statefulset`) works, for `bench/scheduler.ts` to measure Shoal's against. For every vreplica,
 * one at a time, it runs every filter plugin over every dispatcher, scores every dispatcher left with every
 * score plugin, and takes the highest weighted sum (ties to the lowest ordinal).
 *
 * The plugins have the semantics of Shoal's `ha` profile, written as plain per-dispatcher functions:
 * PodFitsResources, NoMaxResourceCount (caps the vreplicas), EvenPodSpread (maxSkew 1 at the zone, the node
 * within its zone and the dispatcher on its node; only places with a free slot count towards the fewest),
 * AvailabilityZonePriority (20), AvailabilityNodePriority (4), LowestOrdinalPriority (1).
 *
 * It is a generous peer: the source's spread per zone, node and dispatcher is kept up to date as vreplicas land,
 * the fewest per level is found by one scan per vreplica, so each plugin call is O(1) and a vreplica costs
 * O(dispatchers) — Knative's own EvenPodSpread compares each pod with every other pod, O(dispatchers²) — and
 * nothing is allocated per vreplica.
 */
import type { DispatcherInfo, Placement, VPod } from '../src/scheduler/index.ts'
import type { SlotKind } from '../src/store/index.ts'

/** The pool and one source's spread, as the plugins read them. */
interface PeerState {
  readonly count: number
  readonly zoneOf: Int32Array
  readonly nodeOf: Int32Array
  readonly ordinal: Int32Array
  readonly maxOrdinal: number
  /** Free slots of the source's kind, per dispatcher. */
  readonly free: Int32Array
  /** The current source's vreplicas per dispatcher, per node, per zone. */
  readonly placed: Int32Array
  readonly nodePlaced: Int32Array
  readonly zonePlaced: Int32Array
  /** The fewest of the source on a zone with a free slot; per zone, on a node of it with a free slot; per node, on a dispatcher of it with a free slot. */
  zoneMin: number
  readonly nodeMin: Int32Array
  readonly dispatcherMin: Int32Array
}

interface Filter {
  readonly name: string
  filter(s: PeerState, d: number): boolean
}

interface Score {
  readonly name: string
  readonly weight: number
  score(s: PeerState, d: number): number
}

const FILTERS: readonly Filter[] = [
  { name: 'PodFitsResources', filter: (s, d) => s.free[d]! > 0 },
  {
    name: 'EvenPodSpread',
    filter: (s, d) => {
      const zone = s.zoneOf[d]!
      const node = s.nodeOf[d]!
      return (
        s.zonePlaced[zone]! + 1 - s.zoneMin <= 1 &&
        s.nodePlaced[node]! + 1 - s.nodeMin[zone]! <= 1 &&
        s.placed[d]! + 1 - s.dispatcherMin[node]! <= 1
      )
    }
  }
]

const SCORES: readonly Score[] = [
  { name: 'AvailabilityZonePriority', weight: 20, score: (s, d) => 1 / (1 + s.zonePlaced[s.zoneOf[d]!]! - s.zoneMin) },
  {
    name: 'AvailabilityNodePriority',
    weight: 4,
    score: (s, d) => 1 / (1 + s.nodePlaced[s.nodeOf[d]!]! - s.nodeMin[s.zoneOf[d]!]!)
  },
  { name: 'LowestOrdinalPriority', weight: 1, score: (s, d) => 1 - s.ordinal[d]! / (s.maxOrdinal + 1) }
]

/** NoMaxResourceCount: a source never gets more vreplicas than its partitions. */
const limit = (v: VPod) => Math.min(v.vreplicas, v.maxVReplicas ?? Number.POSITIVE_INFINITY)

export interface PeerSource {
  readonly key: string
  readonly placements: readonly Placement[]
  readonly pending: number
}

export interface PeerResult {
  /** The sources scheduled (all of them, or a prefix when the time box ran out). */
  readonly sources: readonly PeerSource[]
  readonly vreplicasPlaced: number
  readonly pending: number
  /** Vreplicas (the sources' capped vreplicas) the scheduled sources wanted: placed + pending. */
  readonly vreplicasWanted: number
  /** Slots used per kind, per dispatcher in the order of the pool given. */
  readonly used: Readonly<Record<SlotKind, Int32Array>>
  readonly ms: number
  /** False when the time box stopped it before the last source. */
  readonly complete: boolean
}

/**
 * Places every source's vreplicas on a fresh pool, in order, from scratch. With `budgetMs`, stops after the
 * source during which the budget ran out.
 */
export function peerSchedule(
  dispatchers: readonly DispatcherInfo[],
  vpods: readonly VPod[],
  options: { readonly budgetMs?: number } = {}
): PeerResult {
  const t0 = performance.now()
  const deadline = t0 + (options.budgetMs ?? Number.POSITIVE_INFINITY)
  const count = dispatchers.length
  const zones = new Map<string, number>()
  const nodes = new Map<string, number>()
  const zoneOf = new Int32Array(count)
  const nodeOf = new Int32Array(count)
  const ordinal = new Int32Array(count)
  const free = new Int32Array(count)
  let maxOrdinal = 0
  dispatchers.forEach((d, i) => {
    if (!zones.has(d.zone)) zones.set(d.zone, zones.size)
    if (!nodes.has(d.node)) nodes.set(d.node, nodes.size)
    zoneOf[i] = zones.get(d.zone)!
    nodeOf[i] = nodes.get(d.node)!
    ordinal[i] = d.ordinal
    maxOrdinal = Math.max(maxOrdinal, d.ordinal)
  })
  const zoneOfNode = new Int32Array(nodes.size)
  for (let i = 0; i < count; i++) zoneOfNode[nodeOf[i]!] = zoneOf[i]!
  const capacityFor = (slot: VPod['slot']) => dispatchers.map(d => (d.state === 'ready' ? d.capacity[slot] : 0))
  const capacity = { consumer: capacityFor('consumer'), schedule: capacityFor('schedule') }
  const used = { consumer: new Int32Array(count), schedule: new Int32Array(count) }
  const s: PeerState = {
    count,
    zoneOf,
    nodeOf,
    ordinal,
    maxOrdinal,
    free,
    placed: new Int32Array(count),
    nodePlaced: new Int32Array(nodes.size),
    zonePlaced: new Int32Array(zones.size),
    zoneMin: 0,
    nodeMin: new Int32Array(zones.size),
    dispatcherMin: new Int32Array(nodes.size)
  }
  const zoneHasFree = new Uint8Array(zones.size)
  const nodeHasFree = new Uint8Array(nodes.size)
  const feasible = new Int32Array(count)
  const touched: number[] = []

  const out: PeerSource[] = []
  let vreplicasPlaced = 0
  let pendingTotal = 0
  for (const v of vpods) {
    if (performance.now() > deadline) break
    const cap = capacity[v.slot]
    const use = used[v.slot]
    for (let d = 0; d < count; d++) s.free[d] = cap[d]! - use[d]!
    const target = limit(v)
    let placedHere = 0
    for (; placedHere < target; placedHere++) {
      // The state the spread plugins read: the fewest of the source where a slot is free, per level.
      zoneHasFree.fill(0)
      nodeHasFree.fill(0)
      s.dispatcherMin.fill(0x7fffffff)
      for (let d = 0; d < count; d++) {
        if (s.free[d]! <= 0) continue
        const node = nodeOf[d]!
        zoneHasFree[zoneOf[d]!] = 1
        nodeHasFree[node] = 1
        if (s.placed[d]! < s.dispatcherMin[node]!) s.dispatcherMin[node] = s.placed[d]!
      }
      s.nodeMin.fill(0x7fffffff)
      for (let n = 0; n < nodeHasFree.length; n++) {
        const zone = zoneOfNode[n]!
        if (nodeHasFree[n] === 1 && s.nodePlaced[n]! < s.nodeMin[zone]!) s.nodeMin[zone] = s.nodePlaced[n]!
      }
      s.zoneMin = 0x7fffffff
      for (let z = 0; z < zoneHasFree.length; z++) {
        if (zoneHasFree[z] === 1 && s.zonePlaced[z]! < s.zoneMin) s.zoneMin = s.zonePlaced[z]!
      }

      // Filter every dispatcher.
      let feasibleCount = 0
      for (let d = 0; d < count; d++) {
        let ok = true
        for (const f of FILTERS) {
          if (!f.filter(s, d)) {
            ok = false
            break
          }
        }
        if (ok) feasible[feasibleCount++] = d
      }
      if (feasibleCount === 0) break

      // Score every feasible dispatcher; the highest weighted sum wins, ties go to the first.
      let best = -1
      let bestScore = Number.NEGATIVE_INFINITY
      for (let i = 0; i < feasibleCount; i++) {
        const d = feasible[i]!
        let total = 0
        for (const p of SCORES) total += p.weight * p.score(s, d)
        if (total > bestScore) {
          bestScore = total
          best = d
        }
      }

      if (s.placed[best] === 0) touched.push(best)
      s.placed[best]!++
      s.nodePlaced[nodeOf[best]!]!++
      s.zonePlaced[zoneOf[best]!]!++
      s.free[best]!--
      use[best]!++
    }

    touched.sort((a, b) => ordinal[a]! - ordinal[b]!)
    const placements: Placement[] = touched.map(d => ({ podName: dispatchers[d]!.id, vreplicas: s.placed[d]! }))
    for (const d of touched) {
      s.placed[d] = 0
      s.nodePlaced[nodeOf[d]!] = 0
      s.zonePlaced[zoneOf[d]!] = 0
    }
    touched.length = 0
    vreplicasPlaced += placedHere
    pendingTotal += target - placedHere
    out.push({ key: v.key, placements, pending: target - placedHere })
  }
  return {
    sources: out,
    vreplicasPlaced,
    pending: pendingTotal,
    vreplicasWanted: vreplicasPlaced + pendingTotal,
    used,
    ms: performance.now() - t0,
    complete: out.length === vpods.length
  }
}

/**
 * Sanity of a peer result: no dispatcher above its capacity of either kind, only ready dispatchers used, the
 * placements add up to the use, and every source scheduled has placed + pending = its capped vreplicas. Returns
 * the problems found (none when sane).
 */
export function checkPeer(dispatchers: readonly DispatcherInfo[], vpods: readonly VPod[], r: PeerResult): string[] {
  const problems: string[] = []
  const index = new Map(dispatchers.map((d, i) => [d.id, i]))
  const sum = { consumer: new Int32Array(dispatchers.length), schedule: new Int32Array(dispatchers.length) }
  r.sources.forEach((src, i) => {
    const v = vpods[i]!
    let placed = 0
    for (const p of src.placements) {
      sum[v.slot][index.get(p.podName)!]! += p.vreplicas
      placed += p.vreplicas
    }
    if (src.key !== v.key || placed + src.pending !== limit(v)) problems.push(`${src.key}: ${placed} + ${src.pending}`)
  })
  for (const slot of ['consumer', 'schedule'] as const) {
    dispatchers.forEach((d, i) => {
      const used = r.used[slot][i]!
      if (sum[slot][i] !== used) problems.push(`${d.id}: ${slot} placements ${sum[slot][i]} ≠ use ${used}`)
      if (used > (d.state === 'ready' ? d.capacity[slot] : 0)) problems.push(`${d.id}: ${slot} over capacity`)
    })
  }
  return problems
}
