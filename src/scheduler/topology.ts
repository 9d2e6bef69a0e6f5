import { ErrorCodes, ShoalError } from '../errors/index.ts'
import type { SlotKind } from '../store/index.ts'
import type { DispatcherInfo } from './types.ts'

/** 0 for consumer slots, 1 for schedule slots: per-kind figures live in pairs of arrays. */
export type KindIndex = 0 | 1

export const SLOT_KINDS: readonly [SlotKind, SlotKind] = ['consumer', 'schedule']

export function kindIndex(slot: SlotKind): KindIndex {
  return slot === 'consumer' ? 0 : 1
}

/** No zone, node or slot. */
export const NONE = -1

const STATES = new Set(['ready', 'cordoned', 'draining'])

type Pair<T> = [T, T]

function pair<T>(make: () => T): Pair<T> {
  return [make(), make()]
}

/**
 * The dispatcher pool as the placement descent reads it: every dispatcher has a stable slot number, and free
 * capacity is kept per dispatcher, node and zone, for each slot kind, updated on every placement. Zones and nodes
 * are numbered in name order, dispatchers on a node in ordinal order.
 */
export class Topology {
  // One slot per dispatcher id ever seen, never reused: placements name dispatchers by slot.
  readonly ids: string[] = []
  readonly #slotOf = new Map<string, number>()
  readonly #info: Array<DispatcherInfo | undefined> = []
  readonly ordinal: number[] = []
  readonly zoneOf: number[] = []
  readonly nodeOf: number[] = []
  readonly schedulable: boolean[] = []
  readonly cap: Pair<number[]> = pair(() => [])
  readonly used: Pair<number[]> = pair(() => [])

  zoneNames: string[] = []
  nodeNames: string[] = []
  nodeZone: number[] = []
  zoneNodes: number[][] = []
  /** The schedulable dispatchers of each node, by ordinal. */
  nodeSlots: number[][] = []
  zoneCap: Pair<number[]> = pair(() => [])
  nodeCap: Pair<number[]> = pair(() => [])
  zoneFree: Pair<number[]> = pair(() => [])
  nodeFree: Pair<number[]> = pair(() => [])
  readonly totalCap: Pair<number> = [0, 0]
  readonly totalFree: Pair<number> = [0, 0]
  /** Zones and nodes with schedulable capacity of each kind. */
  readonly schedulableZones: Pair<number> = [0, 0]
  readonly schedulableNodes: Pair<number> = [0, 0]
  /** Set when some dispatcher gained a free slot of the kind; the scheduler clears it. */
  readonly freeIncreased: Pair<boolean> = [false, false]
  maxOrdinal = 0
  presentCount = 0

  #nodeLowest: Pair<number[]> = pair(() => [])
  #nodeLowestDirty: Pair<boolean[]> = pair(() => [])
  #zoneLowest: Pair<number[]> = pair(() => [])
  #zoneLowestDirty: Pair<boolean[]> = pair(() => [])

  get slotCount(): number {
    return this.ids.length
  }

  slot(id: string): number | undefined {
    return this.#slotOf.get(id)
  }

  /** The slot of a dispatcher id, created (absent, unschedulable) when new. */
  ensureSlot(id: string): number {
    let s = this.#slotOf.get(id)
    if (s === undefined) {
      s = this.ids.length
      this.#slotOf.set(id, s)
      this.ids.push(id)
      this.#info.push(undefined)
      const match = /-(\d+)$/.exec(id)
      this.ordinal.push(match ? Number(match[1]) : Number.MAX_SAFE_INTEGER)
      this.zoneOf.push(NONE)
      this.nodeOf.push(NONE)
      this.schedulable.push(false)
      for (const k of [0, 1] as const) {
        this.cap[k].push(0)
        this.used[k].push(0)
      }
    }
    return s
  }

  info(s: number): DispatcherInfo | undefined {
    return this.#info[s]
  }

  /** Free slots of kind k on dispatcher s: none when it is not schedulable; negative when overcommitted. */
  free(k: KindIndex, s: number): number {
    return this.schedulable[s] === true ? this.cap[k][s]! - this.used[k][s]! : 0
  }

  /** Whether vreplicas on dispatcher s must leave it: it is gone, not schedulable, or over its capacity. */
  mustEvict(k: KindIndex, s: number): boolean {
    return this.schedulable[s] !== true || this.used[k][s]! > this.cap[k][s]!
  }

  /**
   * Replaces the pool with the given live dispatchers. Returns true when vreplicas must leave some dispatcher
   * (it went, was cordoned or drained, or its capacity fell below its use).
   */
  setDispatchers(list: readonly DispatcherInfo[]): boolean {
    const next = new Map<number, DispatcherInfo>()
    for (const [index, info] of list.entries()) {
      checkDispatcher(info, index)
      const s = this.ensureSlot(info.id)
      if (next.has(s)) throw new ShoalError(ErrorCodes.USAGE, `dispatcher ${info.id} is listed twice`)
      next.set(s, info)
    }
    let changed = false
    for (let s = 0; s < this.ids.length && !changed; s++) changed = !sameDispatcher(this.#info[s], next.get(s))
    if (!changed) return false

    const freeBefore = pair(() => this.ids.map(() => 0))
    for (const k of [0, 1] as const)
      for (let s = 0; s < this.ids.length; s++) freeBefore[k][s] = Math.max(0, this.free(k, s))

    this.presentCount = next.size
    this.maxOrdinal = 0
    for (let s = 0; s < this.ids.length; s++) {
      const info = next.get(s)
      this.#info[s] = info
      this.schedulable[s] = info?.state === 'ready'
      this.cap[0][s] = info?.capacity.consumer ?? 0
      this.cap[1][s] = info?.capacity.schedule ?? 0
      if (info !== undefined) {
        this.ordinal[s] = info.ordinal
        this.maxOrdinal = Math.max(this.maxOrdinal, info.ordinal)
      }
    }
    this.#rebuild()

    let evict = false
    for (const k of [0, 1] as const) {
      for (let s = 0; s < this.ids.length; s++) {
        if (Math.max(0, this.free(k, s)) > freeBefore[k][s]!) this.freeIncreased[k] = true
        if (this.used[k][s]! > 0 && this.mustEvict(k, s)) evict = true
      }
    }
    return evict
  }

  #rebuild(): void {
    const zoneSet = new Set<string>()
    const nodeKeys = new Map<string, { zone: string; node: string }>()
    for (let s = 0; s < this.ids.length; s++) {
      const info = this.#info[s]
      if (info === undefined) continue
      zoneSet.add(info.zone)
      nodeKeys.set(nodeKey(info.zone, info.node), { zone: info.zone, node: info.node })
    }
    this.zoneNames = [...zoneSet].sort()
    const zoneIndex = new Map(this.zoneNames.map((z, i) => [z, i]))
    const nodes = [...nodeKeys.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    const nodeIndex = new Map(nodes.map(([key], i) => [key, i]))
    this.nodeNames = nodes.map(([, n]) => n.node)
    this.nodeZone = nodes.map(([, n]) => zoneIndex.get(n.zone)!)
    this.zoneNodes = this.zoneNames.map(() => [])
    for (let n = 0; n < this.nodeZone.length; n++) this.zoneNodes[this.nodeZone[n]!]!.push(n)
    this.nodeSlots = this.nodeNames.map(() => [])
    for (let s = 0; s < this.ids.length; s++) {
      const info = this.#info[s]
      if (info === undefined) {
        this.zoneOf[s] = NONE
        this.nodeOf[s] = NONE
        continue
      }
      this.zoneOf[s] = zoneIndex.get(info.zone)!
      const n = nodeIndex.get(nodeKey(info.zone, info.node))!
      this.nodeOf[s] = n
      if (this.schedulable[s] === true) this.nodeSlots[n]!.push(s)
    }
    for (const slots of this.nodeSlots) slots.sort((a, b) => this.ordinal[a]! - this.ordinal[b]! || a - b)

    const Z = this.zoneNames.length
    const N = this.nodeNames.length
    for (const k of [0, 1] as const) {
      const zoneCap = new Array<number>(Z).fill(0)
      const zoneFree = new Array<number>(Z).fill(0)
      const nodeCap = new Array<number>(N).fill(0)
      const nodeFree = new Array<number>(N).fill(0)
      let totalCap = 0
      let totalFree = 0
      for (let s = 0; s < this.ids.length; s++) {
        if (this.schedulable[s] !== true) continue
        const cap = this.cap[k][s]!
        const free = Math.max(0, cap - this.used[k][s]!)
        zoneCap[this.zoneOf[s]!]! += cap
        zoneFree[this.zoneOf[s]!]! += free
        nodeCap[this.nodeOf[s]!]! += cap
        nodeFree[this.nodeOf[s]!]! += free
        totalCap += cap
        totalFree += free
      }
      this.zoneCap[k] = zoneCap
      this.zoneFree[k] = zoneFree
      this.nodeCap[k] = nodeCap
      this.nodeFree[k] = nodeFree
      this.totalCap[k] = totalCap
      this.totalFree[k] = totalFree
      this.schedulableZones[k] = zoneCap.filter(c => c > 0).length
      this.schedulableNodes[k] = nodeCap.filter(c => c > 0).length
      this.#nodeLowest[k] = new Array<number>(N).fill(Number.POSITIVE_INFINITY)
      this.#nodeLowestDirty[k] = new Array<boolean>(N).fill(true)
      this.#zoneLowest[k] = new Array<number>(Z).fill(Number.POSITIVE_INFINITY)
      this.#zoneLowestDirty[k] = new Array<boolean>(Z).fill(true)
    }
  }

  /** Changes the use of kind k on dispatcher s by delta, keeping the node, zone and pool aggregates in step. */
  addUsed(k: KindIndex, s: number, delta: number): void {
    const used = this.used[k]
    const before = used[s]!
    used[s] = before + delta
    if (this.schedulable[s] !== true) return
    const cap = this.cap[k][s]!
    const freeBefore = cap - before > 0 ? cap - before : 0
    const freeAfter = cap - before - delta > 0 ? cap - before - delta : 0
    const d = freeAfter - freeBefore
    if (d === 0) return
    const n = this.nodeOf[s]!
    const z = this.zoneOf[s]!
    this.nodeFree[k][n]! += d
    this.zoneFree[k][z]! += d
    this.totalFree[k] += d
    if (d > 0) this.freeIncreased[k] = true
    if (freeBefore === 0 || freeAfter === 0) {
      this.#nodeLowestDirty[k][n] = true
      this.#zoneLowestDirty[k][z] = true
    }
  }

  /** The lowest ordinal of a dispatcher on node n with a free slot of kind k (Infinity when none). */
  lowestFreeInNode(k: KindIndex, n: number): number {
    if (this.#nodeLowestDirty[k][n] === true) {
      let lowest = Number.POSITIVE_INFINITY
      const cap = this.cap[k]
      const used = this.used[k]
      for (const s of this.nodeSlots[n]!) {
        if (cap[s]! > used[s]!) {
          lowest = this.ordinal[s]!
          break
        }
      }
      this.#nodeLowest[k][n] = lowest
      this.#nodeLowestDirty[k][n] = false
    }
    return this.#nodeLowest[k][n]!
  }

  /** The lowest ordinal of a dispatcher in zone z with a free slot of kind k (Infinity when none). */
  lowestFreeInZone(k: KindIndex, z: number): number {
    if (this.#zoneLowestDirty[k][z] === true) {
      let lowest = Number.POSITIVE_INFINITY
      for (const n of this.zoneNodes[z]!) lowest = Math.min(lowest, this.lowestFreeInNode(k, n))
      this.#zoneLowest[k][z] = lowest
      this.#zoneLowestDirty[k][z] = false
    }
    return this.#zoneLowest[k][z]!
  }
}

function nodeKey(zone: string, node: string): string {
  return `${zone}\u0000${node}`
}

function sameDispatcher(a: DispatcherInfo | undefined, b: DispatcherInfo | undefined): boolean {
  if (a === undefined || b === undefined) return a === b
  return (
    a.ordinal === b.ordinal &&
    a.zone === b.zone &&
    a.node === b.node &&
    a.state === b.state &&
    a.capacity.consumer === b.capacity.consumer &&
    a.capacity.schedule === b.capacity.schedule
  )
}

function checkDispatcher(info: DispatcherInfo, index: number): void {
  const problems: string[] = []
  if (typeof info.id !== 'string' || info.id === '') problems.push('id must be a non-empty string')
  if (!Number.isSafeInteger(info.ordinal) || info.ordinal < 0) problems.push('ordinal must be a non-negative integer')
  if (typeof info.zone !== 'string') problems.push('zone must be a string')
  if (typeof info.node !== 'string') problems.push('node must be a string')
  for (const kind of SLOT_KINDS) {
    const c = (info.capacity as Partial<Record<SlotKind, number>> | undefined)?.[kind]
    if (!Number.isSafeInteger(c) || (c as number) < 0) problems.push(`capacity.${kind} must be a non-negative integer`)
  }
  if (!STATES.has(info.state)) problems.push('state must be ready, cordoned or draining')
  if (problems.length > 0) {
    throw new ShoalError(ErrorCodes.USAGE, `dispatcher [${index}] (${String(info.id)}): ${problems.join('; ')}`)
  }
}
