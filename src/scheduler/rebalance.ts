import type { PlaceResult, Placer } from './placer.ts'
import { NONE } from './topology.ts'
import type { KindIndex, Topology } from './topology.ts'
import type { Move } from './types.ts'
import type { VPodState } from './vpod-state.ts'

/** Options of proposeRebalance. */
export interface RebalanceOptions {
  /** The most single-vreplica moves to consider (default 1000); the proposal merges them per source. */
  readonly maxMoves?: number
}

/** What planRebalance reads and (temporarily) changes. */
export interface RebalanceInput {
  readonly topo: Topology
  readonly placer: Placer
  readonly vpods: ReadonlyMap<string, VPodState>
  readonly score: () => number
}

export const DEFAULT_MAX_MOVES = 1000

interface Step {
  readonly v: VPodState
  readonly from: number
  readonly to: number
}

/**
 * Plans moves that raise the balancedness score: first each source's vreplicas above its fair share in a zone,
 * then in a node, go where it has fewer (chosen by the placement and removal plugins, as a pass would); then, when
 * load counts in the score, vreplicas move from the dispatchers most above their fair share to those most below,
 * never worsening the source's spread. The moves are made on the live state to measure the score, then undone.
 */
export function planRebalance(
  input: RebalanceInput,
  options: RebalanceOptions
): { scoreBefore: number; scoreAfter: number; moves: Move[] } {
  const { topo, placer } = input
  const scoreBefore = input.score()
  const steps: Step[] = []
  const flags = [...topo.freeIncreased]
  let budget = options.maxMoves ?? DEFAULT_MAX_MOVES
  const move = (v: VPodState, from: number, to: number) => {
    placer.add(v, to, 1)
    placer.remove(v, from, 1)
    steps.push({ v, from, to })
    budget--
  }
  try {
    for (const v of input.vpods.values()) {
      if (budget <= 0) break
      if (v.deleted || v.orphan || v.placed < 2) continue
      placer.load(v)
      spreadZones(topo, placer, v, move, () => budget)
      spreadNodes(topo, placer, v, move, () => budget)
      placer.unload(v)
    }
    balanceLoad(input, move, () => budget)
    restoreAvailability(input, move)
    const scoreAfter = input.score()
    if (scoreAfter <= scoreBefore) return { scoreBefore, scoreAfter: scoreBefore, moves: [] }
    return { scoreBefore, scoreAfter, moves: netMoves(topo, steps) }
  } finally {
    for (let i = steps.length - 1; i >= 0; i--) {
      const { v, from, to } = steps[i]!
      placer.add(v, from, 1)
      placer.remove(v, to, 1)
    }
    topo.freeIncreased[0] = flags[0]!
    topo.freeIncreased[1] = flags[1]!
  }
}

type MoveFn = (v: VPodState, from: number, to: number) => void

/** A planned move only needs where placeOne would go, not why it would not. */
function slotOf(result: PlaceResult): number {
  return result.kind === 'placed' ? result.slot : NONE
}

function spreadZones(topo: Topology, placer: Placer, v: VPodState, move: MoveFn, budget: () => number): void {
  const zones = topo.schedulableZones[v.kind]
  if (zones < 2) return
  const ideal = Math.ceil(v.placed / zones)
  while (budget() > 0) {
    if (!v.slots.some(s => topo.zoneOf[s] !== NONE && placer.zoneCount(topo.zoneOf[s]!) > ideal)) return
    const to = slotOf(placer.placeOne(v, { zone: z => placer.zoneCount(z) < ideal }))
    if (to === NONE) return
    const from = placer.chooseRemoval(v, s => topo.zoneOf[s] !== NONE && placer.zoneCount(topo.zoneOf[s]!) > ideal)
    if (from === NONE) return
    move(v, from, to)
  }
}

function spreadNodes(topo: Topology, placer: Placer, v: VPodState, move: MoveFn, budget: () => number): void {
  const nodes = topo.schedulableNodes[v.kind]
  const zones = Math.max(1, topo.schedulableZones[v.kind])
  if (nodes < 2) return
  const ideal = Math.ceil(v.placed / nodes)
  const idealZone = Math.ceil(v.placed / zones)
  const overNode = (s: number) => topo.nodeOf[s] !== NONE && placer.nodeCount(topo.nodeOf[s]!) > ideal
  while (budget() > 0) {
    const overZones = new Set<number>()
    for (const s of v.slots) if (overNode(s)) overZones.add(topo.zoneOf[s]!)
    if (overZones.size === 0) return
    // Within the zone of a crowded node, or to a zone below its share: the zone spread never worsens.
    const to = slotOf(
      placer.placeOne(v, {
        zone: z => overZones.has(z) || placer.zoneCount(z) < idealZone,
        node: n => placer.nodeCount(n) < ideal
      })
    )
    if (to === NONE) return
    const zoneTo = topo.zoneOf[to]!
    const crossZone = placer.zoneCount(zoneTo) < idealZone
    const from = placer.chooseRemoval(v, s => overNode(s) && (crossZone || topo.zoneOf[s] === zoneTo))
    if (from === NONE) return
    move(v, from, to)
  }
}

/**
 * Moves may free slots in a zone that a source sitting all in another zone could use: move one of its vreplicas
 * there, as a pass would, so an applied proposal leaves no source in one zone while another has room. These moves
 * are not counted against maxMoves.
 */
function restoreAvailability(input: RebalanceInput, move: MoveFn): void {
  const { topo, placer } = input
  for (let progress = true; progress;) {
    progress = false
    for (const v of input.vpods.values()) {
      if (v.deleted || v.orphan || v.placed < 2 || topo.schedulableZones[v.kind] < 2) continue
      const zone = topo.zoneOf[v.slots[0]!]!
      if (v.slots.some(s => topo.zoneOf[s] !== zone)) continue
      placer.load(v)
      const to = slotOf(placer.placeOne(v, { zone: z => z !== zone }))
      if (to !== NONE) {
        const from = placer.chooseRemoval(v, s => topo.zoneOf[s] === zone)
        if (from !== NONE) {
          move(v, from, to)
          progress = true
        }
      }
      placer.unload(v)
    }
  }
}

function balanceLoad(input: RebalanceInput, move: MoveFn, budget: () => number): void {
  const { topo } = input
  for (const k of [0, 1] as const) {
    const slots: number[] = []
    let used = 0
    for (let s = 0; s < topo.slotCount; s++) {
      if (topo.schedulable[s] === true && topo.cap[k][s]! > 0) {
        slots.push(s)
        used += topo.used[k][s]!
      }
    }
    if (used === 0 || slots.length < 2) continue
    const utilisation = used / topo.totalCap[k]
    const deviation = (s: number) => topo.used[k][s]! - topo.cap[k][s]! * utilisation
    const on = sourcesBySlot(input.vpods, k)
    const exhausted = new Set<number>()
    while (budget() > 0) {
      let hi = NONE
      for (const s of slots) if (!exhausted.has(s) && (hi === NONE || deviation(s) > deviation(hi))) hi = s
      if (hi === NONE || deviation(hi) <= 0.5) break
      const lows = slots
        .filter(s => s !== hi && topo.free(k, s) > 0)
        .sort((a, b) => deviation(a) - deviation(b))
        .slice(0, 4)
      let moved = false
      for (const lo of lows) {
        const dh = deviation(hi)
        const dl = deviation(lo)
        if (Math.abs(dh - 1) + Math.abs(dl + 1) >= Math.abs(dh) + Math.abs(dl) - 1e-9) break
        const v = (on.get(hi) ?? []).find(candidate => canMove(topo, candidate, hi, lo))
        if (v === undefined) continue
        move(v, hi, lo)
        const list = on.get(lo) ?? []
        if (!list.includes(v)) list.push(v)
        on.set(lo, list)
        moved = true
        break
      }
      if (!moved) exhausted.add(hi)
    }
  }
}

function sourcesBySlot(vpods: ReadonlyMap<string, VPodState>, k: KindIndex): Map<number, VPodState[]> {
  const on = new Map<number, VPodState[]>()
  for (const v of vpods.values()) {
    if (v.deleted || v.orphan || v.kind !== k) continue
    for (const s of v.slots) {
      const list = on.get(s)
      if (list === undefined) on.set(s, [v])
      else list.push(v)
    }
  }
  return on
}

/** Whether moving one vreplica of v from one dispatcher to another keeps its zone, node and dispatcher spread. */
function canMove(topo: Topology, v: VPodState, from: number, to: number): boolean {
  const onFrom = v.countOn(from)
  if (onFrom === 0 || v.countOn(to) >= onFrom) return false
  const zf = topo.zoneOf[from]!
  const zt = topo.zoneOf[to]!
  const nf = topo.nodeOf[from]!
  const nt = topo.nodeOf[to]!
  let czf = 0
  let czt = 0
  let cnf = 0
  let cnt = 0
  for (let i = 0; i < v.slots.length; i++) {
    const s = v.slots[i]!
    const c = v.counts[i]!
    if (topo.zoneOf[s] === zf) czf += c
    if (topo.zoneOf[s] === zt) czt += c
    if (topo.nodeOf[s] === nf) cnf += c
    if (topo.nodeOf[s] === nt) cnt += c
  }
  const idealZone = Math.ceil(v.placed / Math.max(1, topo.schedulableZones[v.kind]))
  const idealNode = Math.ceil(v.placed / Math.max(1, topo.schedulableNodes[v.kind]))
  const excess = (c: number, ideal: number) => Math.max(0, c - ideal)
  const zoneDelta =
    zf === zt
      ? 0
      : excess(czt + 1, idealZone) - excess(czt, idealZone) + excess(czf - 1, idealZone) - excess(czf, idealZone)
  const nodeDelta =
    nf === nt
      ? 0
      : excess(cnt + 1, idealNode) - excess(cnt, idealNode) + excess(cnf - 1, idealNode) - excess(cnf, idealNode)
  return zoneDelta <= 0 && nodeDelta <= 0
}

/** Single-vreplica steps, netted per source and dispatcher, as the fewest moves that reach the same state. */
function netMoves(topo: Topology, steps: readonly Step[]): Move[] {
  const net = new Map<VPodState, Map<number, number>>()
  for (const { v, from, to } of steps) {
    const d = net.get(v) ?? new Map<number, number>()
    net.set(v, d)
    d.set(from, (d.get(from) ?? 0) - 1)
    d.set(to, (d.get(to) ?? 0) + 1)
  }
  const moves: Move[] = []
  for (const [v, d] of net) {
    const out = [...d].filter(([, c]) => c < 0).map(([s, c]) => ({ s, c: -c }))
    const into = [...d].filter(([, c]) => c > 0).map(([s, c]) => ({ s, c }))
    let i = 0
    for (const target of into) {
      while (target.c > 0 && i < out.length) {
        const source = out[i]!
        const n = Math.min(source.c, target.c)
        moves.push({ source: v.key, from: topo.ids[source.s]!, to: topo.ids[target.s]!, vreplicas: n })
        source.c -= n
        target.c -= n
        if (source.c === 0) i++
      }
    }
  }
  return moves
}
