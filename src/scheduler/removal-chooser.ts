import { DISPATCHER, Marks, MutableContext, MutableRemovalCandidate, NODE, ZONE } from './descent.ts'
import type { LevelIndex } from './descent.ts'
import type { ResolvedPlugins } from './resolve-plugins.ts'
import { NONE } from './topology.ts'
import type { Topology } from './topology.ts'
import type { VPodState } from './vpod-state.ts'

/** The loaded source's counts, as the Placer keeps them. */
export interface LoadedCounts {
  /** Vreplicas of the loaded source. */
  readonly placed: number
  /** Zones holding some of them. */
  readonly distinctZones: number
  zoneCount(z: number): number
  nodeCount(n: number): number
}

type Allow = ((s: number) => boolean) | undefined

/**
 * The removal descent: which dispatcher to take one vreplica of the loaded source off. A zone holding some of the
 * source, then a node in it, then a dispatcher on it, each ranked by the removal plugins (ties go to the last, the
 * higher ordinals).
 */
export class RemovalChooser {
  readonly #topo: Topology
  readonly #plugins: ResolvedPlugins
  readonly #counts: LoadedCounts
  readonly #marks = new Marks()
  // Where each marked zone or node sits in its candidate array, to raise its highest ordinal.
  #zoneIndex = new Int32Array(0)
  #nodeIndex = new Int32Array(0)
  readonly #candidates: MutableRemovalCandidate[][] = [[], [], []]
  readonly #context = new MutableContext()

  constructor(topo: Topology, plugins: ResolvedPlugins, counts: LoadedCounts) {
    this.#topo = topo
    this.#plugins = plugins
    this.#counts = counts
  }

  /**
   * The slot to take one vreplica of the loaded source off (among the allowed ones), NONE when none is allowed.
   * Never leaves two or more vreplicas all in one zone when another choice exists.
   */
  choose(v: VPodState, allow: Allow): number {
    const topo = this.#topo
    const marks = this.#marks
    marks.fit(topo.zoneNames.length, topo.nodeNames.length)
    if (this.#zoneIndex.length < marks.zone.length) this.#zoneIndex = new Int32Array(marks.zone.length)
    if (this.#nodeIndex.length < marks.node.length) this.#nodeIndex = new Int32Array(marks.node.length)
    const mark = marks.next()
    const context = this.#context
    context.vpod = v.vpod
    context.placed = this.#counts.placed
    context.maxOrdinal = topo.maxOrdinal
    const z = this.#chooseZone(v, allow, mark)
    if (z === NONE) return NONE
    const n = this.#chooseNode(v, allow, mark, z)
    return this.#chooseDispatcher(v, allow, z, n)
  }

  #chooseZone(v: VPodState, allow: Allow, mark: number): number {
    const topo = this.#topo
    const zones = this.#candidates[ZONE]!
    const marked = this.#marks.zone
    let count = 0
    for (const s of v.slots) {
      const z = topo.zoneOf[s]!
      if (z === NONE || (allow !== undefined && !allow(s))) continue
      if (marked[z] !== mark) {
        marked[z] = mark
        this.#zoneIndex[z] = count
        const c = (zones[count++] ??= new MutableRemovalCandidate())
        c.level = 'zone'
        c.ref = z
        c.name = topo.zoneNames[z]!
        c.zone = c.name
        c.placed = this.#counts.zoneCount(z)
        c.highestOrdinal = topo.ordinal[s]!
      } else {
        const c = zones[this.#zoneIndex[z]!]!
        c.highestOrdinal = Math.max(c.highestOrdinal, topo.ordinal[s]!)
      }
    }
    if (count === 0) return NONE
    // The availability floor: never take the last vreplica out of the second of two zones.
    if (this.#counts.distinctZones === 2 && this.#counts.placed - 1 >= 2 && count > 1) {
      let kept = 0
      for (let i = 0; i < count; i++) {
        const c = zones[i]!
        if (c.placed === 1) continue
        zones[i] = zones[kept]!
        zones[kept++] = c
      }
      if (kept > 0) count = kept
    }
    return zones[this.#best(ZONE, count)]!.ref
  }

  #chooseNode(v: VPodState, allow: Allow, mark: number, z: number): number {
    const topo = this.#topo
    const nodes = this.#candidates[NODE]!
    const marked = this.#marks.node
    const zone = topo.zoneNames[z]!
    let count = 0
    for (const s of v.slots) {
      const n = topo.nodeOf[s]!
      if (topo.zoneOf[s] !== z || (allow !== undefined && !allow(s))) continue
      if (marked[n] !== mark) {
        marked[n] = mark
        this.#nodeIndex[n] = count
        const c = (nodes[count++] ??= new MutableRemovalCandidate())
        c.level = 'node'
        c.ref = n
        c.name = topo.nodeNames[n]!
        c.zone = zone
        c.placed = this.#counts.nodeCount(n)
        c.highestOrdinal = topo.ordinal[s]!
      } else {
        const c = nodes[this.#nodeIndex[n]!]!
        c.highestOrdinal = Math.max(c.highestOrdinal, topo.ordinal[s]!)
      }
    }
    return nodes[this.#best(NODE, count)]!.ref
  }

  #chooseDispatcher(v: VPodState, allow: Allow, z: number, n: number): number {
    const topo = this.#topo
    const dispatchers = this.#candidates[DISPATCHER]!
    const zone = topo.zoneNames[z]!
    const slots = v.slots
    let count = 0
    for (let i = 0; i < slots.length; i++) {
      const s = slots[i]!
      if (topo.nodeOf[s] !== n || topo.zoneOf[s] !== z || (allow !== undefined && !allow(s))) continue
      const c = (dispatchers[count++] ??= new MutableRemovalCandidate())
      c.level = 'dispatcher'
      c.ref = s
      c.name = topo.ids[s]!
      c.zone = zone
      c.placed = v.counts[i]!
      c.highestOrdinal = topo.ordinal[s]!
    }
    return dispatchers[this.#best(DISPATCHER, count)]!.ref
  }

  /** Scores the first n candidates of a level; the index of the winner (ties go to the last). */
  #best(level: LevelIndex, n: number): number {
    if (n <= 1) return 0
    const cands = this.#candidates[level]!
    const context = this.#context
    context.describe(level, cands, n)
    const removals = this.#plugins.removals[level]
    let best = n - 1
    let bestScore = Number.NEGATIVE_INFINITY
    for (let i = 0; i < n; i++) {
      const c = cands[i]!
      let score = 0
      for (const r of removals) score += r.weight * r.plugin.score(c, context, r.args)
      if (score >= bestScore) {
        bestScore = score
        best = i
      }
    }
    return best
  }
}
