import { DISPATCHER, Marks, MutableCandidate, MutableContext, NODE, ZONE } from './descent.ts'
import type { LevelIndex } from './descent.ts'
import { RemovalChooser } from './removal-chooser.ts'
import type { LoadedCounts } from './removal-chooser.ts'
import type { ResolvedPlugins } from './resolve-plugins.ts'
import { NONE } from './topology.ts'
import type { KindIndex, Topology } from './topology.ts'
import type { VPodState } from './vpod-state.ts'

/** Why placeOne placed nothing. */
export type PlaceFailure =
  /** No zone it may look in has a free slot of the source's kind. */
  | { readonly kind: 'no-capacity' }
  /**
   * Free slots exist, but none passed: `filter` is the last filter that refused a candidate, undefined when the
   * restriction alone left nothing.
   */
  | { readonly kind: 'refused'; readonly filter: string | undefined }

/** What placeOne did with one vreplica: the slot it chose, or why there is none. */
export type PlaceResult = { readonly kind: 'placed'; readonly slot: number } | PlaceFailure

/** The one no-capacity result (it carries nothing). */
export const NO_CAPACITY: PlaceFailure = Object.freeze({ kind: 'no-capacity' })

/** Limits where placeOne may put a vreplica (rebalancing, availability moves). */
export interface Restriction {
  readonly zone?: (z: number) => boolean
  readonly node?: (n: number) => boolean
}

/**
 * Places and removes one source's vreplicas. A vreplica descends zone → node → dispatcher; at each level the
 * plugins see the children that already hold some of the source, plus two representatives of those that hold
 * none (the one with the lowest free ordinal and the one with the most free slots), so a placement costs
 * O(zones + nodes in a zone + dispatchers on a node) cheap reads and a handful of plugin calls. Removal descends
 * the same way, over the zones, nodes and dispatchers holding the source (removal-chooser.ts).
 *
 * `load(v)` fills per-zone, per-node and per-dispatcher counts of the source in scratch arrays; `unload(v)`
 * clears them. placeOne and chooseRemoval need the source loaded; add and remove keep the counts in step.
 */
export class Placer implements LoadedCounts {
  readonly #topo: Topology
  readonly #plugins: ResolvedPlugins
  #zoneCount = new Int32Array(0)
  #nodeCount = new Int32Array(0)
  #slotCount = new Int32Array(0)
  readonly #marks = new Marks()
  #loaded: VPodState | undefined = undefined
  #placed = 0
  #distinctZones = 0
  readonly #candidates: MutableCandidate[][] = [[], [], []]
  readonly #passing: number[] = []
  readonly #context = new MutableContext()
  readonly #removal: RemovalChooser
  /** The filter that refused last during the current placeOne. */
  #refusedBy: string | undefined = undefined

  constructor(topo: Topology, plugins: ResolvedPlugins) {
    this.#topo = topo
    this.#plugins = plugins
    this.#removal = new RemovalChooser(topo, plugins, this)
  }

  get placed(): number {
    return this.#placed
  }

  /** Zones that hold some of the loaded source's vreplicas. */
  get distinctZones(): number {
    return this.#distinctZones
  }

  zoneCount(z: number): number {
    return this.#zoneCount[z]!
  }

  nodeCount(n: number): number {
    return this.#nodeCount[n]!
  }

  slotCount(s: number): number {
    return this.#slotCount[s]!
  }

  /** The zone holding all of the loaded source's vreplicas, when there is exactly one. */
  soleZone(): number {
    if (this.#distinctZones !== 1) return NONE
    for (let z = 0; z < this.#zoneCount.length; z++) if (this.#zoneCount[z]! > 0) return z
    return NONE
  }

  load(v: VPodState): void {
    const topo = this.#topo
    if (this.#zoneCount.length < topo.zoneNames.length) this.#zoneCount = new Int32Array(topo.zoneNames.length * 2)
    if (this.#nodeCount.length < topo.nodeNames.length) this.#nodeCount = new Int32Array(topo.nodeNames.length * 2)
    this.#marks.fit(topo.zoneNames.length, topo.nodeNames.length)
    if (this.#slotCount.length < topo.slotCount) this.#slotCount = new Int32Array(topo.slotCount * 2 + 16)
    this.#loaded = v
    this.#placed = 0
    this.#distinctZones = 0
    for (let i = 0; i < v.slots.length; i++) this.#count(v.slots[i]!, v.counts[i]!)
  }

  unload(v: VPodState): void {
    const topo = this.#topo
    for (const s of v.slots) {
      this.#slotCount[s] = 0
      const z = topo.zoneOf[s]!
      if (z !== NONE) {
        this.#zoneCount[z] = 0
        this.#nodeCount[topo.nodeOf[s]!] = 0
      }
    }
    this.#loaded = undefined
    this.#placed = 0
    this.#distinctZones = 0
  }

  #count(s: number, c: number): void {
    this.#slotCount[s]! += c
    this.#placed += c
    const z = this.#topo.zoneOf[s]!
    if (z === NONE) return
    const before = this.#zoneCount[z]!
    this.#zoneCount[z] = before + c
    if (before === 0 && c > 0) this.#distinctZones++
    else if (before + c === 0 && c < 0) this.#distinctZones--
    this.#nodeCount[this.#topo.nodeOf[s]!]! += c
  }

  /** Puts c more of the source's vreplicas on slot s. */
  add(v: VPodState, s: number, c: number): void {
    const topo = this.#topo
    const slots = v.slots
    const counts = v.counts
    const known = this.#loaded === v ? this.#slotCount[s]! > 0 : slots.includes(s)
    if (known) {
      counts[slots.indexOf(s)]! += c
    } else {
      // Insert in ordinal order, shifting the tail by hand (cheaper than splice on these short arrays).
      const ordinal = topo.ordinal[s]!
      slots.push(s)
      counts.push(c)
      let i = slots.length - 1
      while (i > 0) {
        const before = slots[i - 1]!
        const o = topo.ordinal[before]!
        if (o < ordinal || (o === ordinal && before < s)) break
        slots[i] = before
        counts[i] = counts[i - 1]!
        i--
      }
      slots[i] = s
      counts[i] = c
    }
    v.placed += c
    topo.addUsed(v.kind, s, c)
    if (this.#loaded === v) this.#count(s, c)
  }

  /** Takes c of the source's vreplicas off slot s (at most as many as are there). */
  remove(v: VPodState, s: number, c: number): void {
    const i = v.slots.indexOf(s)
    if (i < 0) return
    const have = v.counts[i]!
    const take = Math.min(have, c)
    if (take === have) {
      v.slots.splice(i, 1)
      v.counts.splice(i, 1)
    } else {
      v.counts[i] = have - take
    }
    v.placed -= take
    this.#topo.addUsed(v.kind, s, -take)
    if (this.#loaded === v) this.#count(s, -take)
  }

  /**
   * Chooses a dispatcher for one more vreplica of the loaded source (without placing it there), or says why none.
   * Unless restricted, a source whose vreplicas all sit in one zone goes to another zone when one has room.
   */
  placeOne(v: VPodState, restrict?: Restriction): PlaceResult {
    const topo = this.#topo
    const k = v.kind
    const zoneFree = topo.zoneFree[k]
    const zoneCap = topo.zoneCap[k]
    const zones = topo.zoneNames
    const cands = this.#candidates[ZONE]!
    const mark = this.#marks.next()
    const excluded = this.#marks.zone
    const context = this.#context
    context.vpod = v.vpod
    context.placed = this.#placed
    context.maxOrdinal = topo.maxOrdinal
    this.#refusedBy = undefined
    let floorZone = this.#placed >= 1 ? this.soleZone() : NONE
    let anyFree = false
    for (;;) {
      let n = 0
      let floorCandidate = -1
      for (let z = 0; z < zones.length; z++) {
        if (zoneFree[z]! <= 0 || excluded[z] === mark) continue
        if (restrict?.zone !== undefined && !restrict.zone(z)) continue
        if (z === floorZone) floorCandidate = n
        const c = (cands[n] ??= new MutableCandidate())
        c.level = 'zone'
        c.ref = z
        c.name = zones[z]!
        c.zone = c.name
        c.free = zoneFree[z]!
        c.capacity = zoneCap[z]!
        c.placed = this.#zoneCount[z]!
        c.lowestOrdinal = topo.lowestFreeInZone(k, z)
        n++
      }
      if (n === 0) return anyFree ? this.#refused() : NO_CAPACITY
      anyFree = true
      // The availability floor: a second zone for a source that sits in one, when another zone has room.
      if (floorCandidate >= 0 && n > 1) {
        const moved = cands[floorCandidate]!
        cands[floorCandidate] = cands[n - 1]!
        cands[n - 1] = moved
        n--
      }
      const i = this.#choose(ZONE, n)
      if (i < 0) {
        if (floorZone !== NONE) {
          floorZone = NONE
          continue
        }
        return this.#refused()
      }
      const z = cands[i]!.ref
      const s = this.#placeInZone(v, z, restrict, mark)
      if (s >= 0) return { kind: 'placed', slot: s }
      excluded[z] = mark
    }
  }

  #refused(): PlaceFailure {
    return { kind: 'refused', filter: this.#refusedBy }
  }

  #placeInZone(v: VPodState, z: number, restrict: Restriction | undefined, mark: number): number {
    const topo = this.#topo
    const k = v.kind
    const nodeFree = topo.nodeFree[k]
    const nodes = topo.zoneNodes[z]!
    const zone = topo.zoneNames[z]!
    const counts = this.#nodeCount
    const excluded = this.#marks.node
    const cands = this.#candidates[NODE]!
    for (;;) {
      // Nodes holding some of the source are offered; of the others, only the one with the lowest free ordinal
      // and the one with the most free slots.
      let byOrdinal = NONE
      let lowest = Number.POSITIVE_INFINITY
      let byFree = NONE
      let most = 0
      let count = 0
      for (const n of nodes) {
        const free = nodeFree[n]!
        if (free <= 0 || excluded[n] === mark) continue
        if (restrict?.node !== undefined && !restrict.node(n)) continue
        if (counts[n]! > 0) {
          this.#fillNode(cands, count++, n, zone, k)
          continue
        }
        const o = topo.lowestFreeInNode(k, n)
        if (o < lowest) {
          lowest = o
          byOrdinal = n
        }
        if (free > most) {
          most = free
          byFree = n
        }
      }
      if (byOrdinal !== NONE) this.#fillNode(cands, count++, byOrdinal, zone, k)
      if (byFree !== NONE && byFree !== byOrdinal) this.#fillNode(cands, count++, byFree, zone, k)
      if (count === 0) return NONE
      const i = this.#choose(NODE, count)
      if (i < 0) return NONE
      const n = cands[i]!.ref
      const s = this.#placeInNode(v, n, zone)
      if (s >= 0) return s
      excluded[n] = mark
    }
  }

  #fillNode(cands: MutableCandidate[], i: number, n: number, zone: string, k: KindIndex): void {
    const topo = this.#topo
    const c = (cands[i] ??= new MutableCandidate())
    c.level = 'node'
    c.ref = n
    c.name = topo.nodeNames[n]!
    c.zone = zone
    c.free = topo.nodeFree[k][n]!
    c.capacity = topo.nodeCap[k][n]!
    c.placed = this.#nodeCount[n]!
    c.lowestOrdinal = topo.lowestFreeInNode(k, n)
  }

  #fillDispatcher(cands: MutableCandidate[], i: number, s: number, zone: string, free: number, k: KindIndex): void {
    const topo = this.#topo
    const c = (cands[i] ??= new MutableCandidate())
    c.level = 'dispatcher'
    c.ref = s
    c.name = topo.ids[s]!
    c.zone = zone
    c.free = free
    c.capacity = topo.cap[k][s]!
    c.placed = this.#slotCount[s]!
    c.lowestOrdinal = topo.ordinal[s]!
  }

  #placeInNode(v: VPodState, n: number, zone: string): number {
    const topo = this.#topo
    const k = v.kind
    const cap = topo.cap[k]
    const used = topo.used[k]
    const slots = topo.nodeSlots[n]!
    const counts = this.#slotCount
    const cands = this.#candidates[DISPATCHER]!
    let byOrdinal = NONE
    let byFree = NONE
    let most = 0
    let count = 0
    for (const s of slots) {
      const free = cap[s]! - used[s]!
      if (free <= 0) continue
      if (counts[s]! > 0) {
        this.#fillDispatcher(cands, count++, s, zone, free, k)
        continue
      }
      if (byOrdinal === NONE) byOrdinal = s
      if (free > most) {
        most = free
        byFree = s
      }
    }
    if (byOrdinal !== NONE) this.#fillDispatcher(cands, count++, byOrdinal, zone, cap[byOrdinal]! - used[byOrdinal]!, k)
    if (byFree !== NONE && byFree !== byOrdinal) this.#fillDispatcher(cands, count++, byFree, zone, most, k)
    if (count === 0) return NONE
    const i = this.#choose(DISPATCHER, count)
    return i < 0 ? NONE : cands[i]!.ref
  }

  /** Filters, then scores, the first n candidates of a level; the index of the winner, or -1. */
  #choose(level: LevelIndex, n: number): number {
    const cands = this.#candidates[level]!
    const context = this.#context
    context.describe(level, cands, n)
    const filters = this.#plugins.filters[level]
    const passing = this.#passing
    let m = 0
    for (let i = 0; i < n; i++) {
      const c = cands[i]!
      let ok = true
      for (const f of filters) {
        if (!f.plugin.filter(c, context, f.args)) {
          ok = false
          this.#refusedBy = f.plugin.name
          break
        }
      }
      if (ok) passing[m++] = i
    }
    if (m <= 1) return m === 0 ? -1 : passing[0]!
    const scores = this.#plugins.scores[level]
    if (scores.length === 0) return passing[0]!
    let best = -1
    let bestScore = Number.NEGATIVE_INFINITY
    for (let j = 0; j < m; j++) {
      const i = passing[j]!
      const c = cands[i]!
      let score = 0
      for (const s of scores) score += s.weight * s.plugin.score(c, context, s.args)
      if (score > bestScore) {
        bestScore = score
        best = i
      }
    }
    return best
  }

  /**
   * Chooses the dispatcher to take one vreplica of the loaded source off (among the allowed ones); NONE when none
   * is allowed. Never leaves two or more vreplicas all in one zone when another choice exists.
   */
  chooseRemoval(v: VPodState, allow?: (s: number) => boolean): number {
    return this.#removal.choose(v, allow)
  }
}
