import type { KindIndex, Topology } from './topology.ts'
import type { PendingReason } from './types.ts'
import type { VPodState } from './vpod-state.ts'

/**
 * The sources waiting for free slots, per slot kind, in the order they started waiting: those with pending
 * vreplicas, and those of two or more vreplicas all in one zone (moved when another zone gets room).
 */
export class WaitingSources {
  readonly #topo: Topology
  readonly #pending: [Set<VPodState>, Set<VPodState>] = [new Set(), new Set()]
  readonly #concentrated: [Set<VPodState>, Set<VPodState>] = [new Set(), new Set()]

  constructor(topo: Topology) {
    this.#topo = topo
  }

  /** Records whether a source just placed waits, for vreplicas or for a second zone. */
  track(v: VPodState, pending: number): void {
    if (pending > 0) this.#pending[v.kind].add(v)
    else this.#pending[v.kind].delete(v)
    this.trackZones(v)
  }

  /** Records whether a source sits all in one zone. */
  trackZones(v: VPodState): void {
    if (v.placed >= 2 && isConcentrated(this.#topo, v)) this.#concentrated[v.kind].add(v)
    else this.#concentrated[v.kind].delete(v)
  }

  forget(v: VPodState): void {
    this.#pending[v.kind].delete(v)
    this.#concentrated[v.kind].delete(v)
  }

  /** Whether slots of the kind were freed since the last retry while some source waits for them. */
  retryDue(k: KindIndex): boolean {
    const topo = this.#topo
    return (
      topo.freeIncreased[k] && topo.totalFree[k] > 0 && (this.#pending[k].size > 0 || this.#concentrated[k].size > 0)
    )
  }

  /**
   * The waiting sources to try again, for each kind whose retry is due (which clears it), longest waiting first;
   * `take` says whether to queue one. One-zone sources are tried only when a second zone has capacity.
   */
  retries(take: (v: VPodState) => boolean): VPodState[] {
    const topo = this.#topo
    const queued: VPodState[] = []
    for (const k of [0, 1] as const) {
      if (!this.retryDue(k)) continue
      topo.freeIncreased[k] = false
      for (const v of this.#pending[k]) if (take(v)) queued.push(v)
      if (topo.schedulableZones[k] < 2) continue
      for (const v of this.#concentrated[k]) if (take(v)) queued.push(v)
    }
    return queued
  }

  /** Vreplicas pending across every source (of one kind and reason, when given). */
  pendingCount(k?: KindIndex, reason?: PendingReason): number {
    let total = 0
    for (const kind of [0, 1] as const) {
      if (k !== undefined && kind !== k) continue
      for (const v of this.#pending[kind])
        if (reason === undefined || v.pending?.reason === reason) total += v.pending?.count ?? 0
    }
    return total
  }
}

/** Whether all of a source's vreplicas sit in one zone. */
export function isConcentrated(topo: Topology, v: VPodState): boolean {
  const z = topo.zoneOf[v.slots[0]!]!
  for (let i = 1; i < v.slots.length; i++) if (topo.zoneOf[v.slots[i]!] !== z) return false
  return true
}
