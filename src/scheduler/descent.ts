import type { Candidate, Level, LevelContext, RemovalCandidate } from './plugin.ts'
import type { VPod } from './types.ts'

// What the placement descent (placer.ts) and the removal descent (removal-chooser.ts) share: the level numbers,
// the reused candidate and context objects the plugins read, and the marks that exclude zones and nodes. Nothing
// here allocates per vreplica.

/** Level numbers, as indices into the resolved plugins and the candidate arrays. */
export const ZONE = 0
export const NODE = 1
export const DISPATCHER = 2
export type LevelIndex = typeof ZONE | typeof NODE | typeof DISPATCHER

const LEVEL_NAMES: readonly Level[] = ['zone', 'node', 'dispatcher']

const NO_VPOD: VPod = Object.freeze({ key: '', slot: 'consumer', vreplicas: 0 })

/** A placement candidate, rewritten in place for each offer. */
export class MutableCandidate implements Candidate {
  level: Level = 'zone'
  name = ''
  zone = ''
  free = 0
  capacity = 0
  placed = 0
  lowestOrdinal = 0
  /** The zone, node or slot number. */
  ref = 0
}

/** A removal candidate, rewritten in place for each offer. */
export class MutableRemovalCandidate implements RemovalCandidate {
  level: Level = 'zone'
  name = ''
  zone = ''
  placed = 0
  highestOrdinal = 0
  /** The zone, node or slot number. */
  ref = 0
}

/** The context both kinds of plugin read, rewritten in place for each level. */
export class MutableContext implements LevelContext {
  vpod: VPod = NO_VPOD
  level: Level = 'zone'
  placed = 0
  minPlaced = 0
  maxPlaced = 0
  maxOrdinal = 0
  candidates = 0

  /** Sets the context for the first n candidates of one level. */
  describe(level: LevelIndex, cands: readonly { readonly placed: number }[], n: number): void {
    let min = Number.POSITIVE_INFINITY
    let max = 0
    for (let i = 0; i < n; i++) {
      const p = cands[i]!.placed
      if (p < min) min = p
      if (p > max) max = p
    }
    this.level = LEVEL_NAMES[level]!
    this.minPlaced = min
    this.maxPlaced = max
    this.candidates = n
  }
}

/**
 * Per-zone and per-node marks: a zone or node is marked when its mark equals the current one, so starting a new
 * descent clears every mark at once.
 */
export class Marks {
  zone = new Int32Array(0)
  node = new Int32Array(0)
  #current = 0

  /** Makes room for this many zones and nodes. */
  fit(zones: number, nodes: number): void {
    if (this.zone.length < zones) this.zone = new Int32Array(zones * 2)
    if (this.node.length < nodes) this.node = new Int32Array(nodes * 2)
  }

  /** A fresh mark: nothing carries it yet. */
  next(): number {
    if (this.#current >= 0x3fffffff) {
      this.#current = 0
      this.zone.fill(0)
      this.node.fill(0)
    }
    return ++this.#current
  }
}
