import type { KindIndex } from './topology.ts'
import type { PendingInfo, VPod } from './types.ts'

const EMPTY: readonly number[] = Object.freeze([])

/** The scheduler's record of one source: its placements as (slot, count) pairs sorted by dispatcher ordinal. */
export class VPodState {
  vpod: VPod
  readonly key: string
  readonly kind: KindIndex
  slots: number[] = []
  counts: number[] = []
  placed = 0
  /** Desired vreplicas capped by the filters' limits, as of the last pass. */
  target = 0
  pending: PendingInfo | undefined = undefined
  deleted = false
  /** Restored from the log before its source was upserted: holds its slots, is not scheduled. */
  orphan = false
  /** The pass that last examined it, and what it held before that pass. */
  stamp = 0
  prevSlots: readonly number[] = EMPTY
  prevCounts: readonly number[] = EMPTY
  prevPending: PendingInfo | undefined = undefined

  constructor(vpod: VPod, kind: KindIndex) {
    this.vpod = vpod
    this.key = vpod.key
    this.kind = kind
  }

  /** Remembers the placements and pending before a pass changes them. */
  snapshot(stamp: number): void {
    this.stamp = stamp
    this.prevSlots = this.slots.length === 0 ? EMPTY : this.slots.slice()
    this.prevCounts = this.counts.length === 0 ? EMPTY : this.counts.slice()
    this.prevPending = this.pending
  }

  /** Whether placements or pending differ from the snapshot. */
  changedSinceSnapshot(): boolean {
    if (this.deleted) return true
    if (!samePending(this.prevPending, this.pending)) return true
    if (this.prevSlots.length !== this.slots.length) return true
    for (let i = 0; i < this.slots.length; i++) {
      if (this.prevSlots[i] !== this.slots[i] || this.prevCounts[i] !== this.counts[i]) return true
    }
    return false
  }

  releaseSnapshot(): void {
    this.prevSlots = EMPTY
    this.prevCounts = EMPTY
    this.prevPending = undefined
  }

  countOn(slot: number): number {
    const i = this.slots.indexOf(slot)
    return i < 0 ? 0 : this.counts[i]!
  }
}

export function samePending(a: PendingInfo | undefined, b: PendingInfo | undefined): boolean {
  if (a === b) return true
  if (a === undefined || b === undefined) return false
  return a.count === b.count && a.reason === b.reason && a.message === b.message
}
