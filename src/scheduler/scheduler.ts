import { ErrorCodes, ShoalError } from '../errors/index.ts'
import type { SlotKind } from '../store/index.ts'
import { computeBalancedness } from './balance.ts'
import { checkProposal } from './check-proposal.ts'
import { checkVPod } from './check-vpod.ts'
import { parseSchedulerConfig } from './config.ts'
import type { SchedulerConfig } from './config.ts'
import { placeSource, releaseSource } from './place-source.ts'
import type { PassParts } from './place-source.ts'
import { Placer } from './placer.ts'
import { DEFAULT_PROFILE, SCHEDULER_PROFILES } from './profiles.ts'
import { planRebalance } from './rebalance.ts'
import type { RebalanceOptions } from './rebalance.ts'
import { createRegistry } from './registry.ts'
import type { PluginRegistry } from './registry.ts'
import { resolvePlugins } from './resolve-plugins.ts'
import { Topology, kindIndex } from './topology.ts'
import type { KindIndex } from './topology.ts'
import type {
  Balancedness,
  DispatcherInfo,
  PassResult,
  PendingInfo,
  Placement,
  RebalanceProposal,
  SchedulerSummary,
  VPod,
  VPodChange
} from './types.ts'
import { VPodState } from './vpod-state.ts'
import { WaitingSources } from './waiting.ts'

/** What a Scheduler is built from. */
export interface SchedulerOptions {
  /** A validated config (parseSchedulerConfig, loadSchedulerConfig); the `ha` profile when absent. */
  readonly config?: SchedulerConfig
  /** The plugins the config names; the built-ins when absent. */
  readonly registry?: PluginRegistry
}

/** One source's placements as the log holds them (`shoal.placements`), for restore(). */
export interface RestoreEntry {
  readonly key: string
  readonly slot: SlotKind
  readonly placements: readonly Placement[]
}

/** What restore() did. */
export interface RestoreResult {
  /** Sources restored. */
  readonly restored: number
  /**
   * Keys restored before their source was upserted: their placements hold their slots until upsertVPod adopts
   * them or removeVPod releases them (then the next pass reports them deleted).
   */
  readonly unknown: readonly string[]
}

const EMPTY_PLACEMENTS: readonly Placement[] = Object.freeze([])

/**
 * The scheduler core: pure, synchronous and incremental. Feed it the live dispatchers and the sources, call
 * `schedule()`, write what it returns. A pass recomputes only the sources marked dirty: those that changed, those
 * on dispatchers that went, were cordoned or drained, and pending (or one-zone) ones when capacity appeared.
 * Existing placements stay where they are otherwise; rebalancing moves them only when a proposal is applied.
 */
export class Scheduler {
  readonly #topo = new Topology()
  readonly #placer: Placer
  readonly #waiting = new WaitingSources(this.#topo)
  readonly #parts: PassParts
  readonly #config: SchedulerConfig
  readonly #vpods = new Map<string, VPodState>()
  readonly #dirty = new Set<VPodState>()
  #evictionCheck = false
  #revision = 0
  #pass = 0

  constructor(options: SchedulerOptions = {}) {
    const registry = options.registry ?? createRegistry()
    this.#config = options.config ?? parseSchedulerConfig(SCHEDULER_PROFILES[DEFAULT_PROFILE], registry)
    const plugins = resolvePlugins(this.#config, registry)
    this.#placer = new Placer(this.#topo, plugins)
    this.#parts = { topo: this.#topo, placer: this.#placer, plugins, waiting: this.#waiting }
  }

  /** Grows whenever placements change (a pass, a restore, an applied rebalance). */
  get revision(): number {
    return this.#revision
  }

  /** Whether a call to schedule() has work to do. */
  get dirty(): boolean {
    return this.#dirty.size > 0 || this.#evictionCheck || this.#waiting.retryDue(0) || this.#waiting.retryDue(1)
  }

  /** Replaces the set of live dispatchers (dead ones are simply left out). */
  setDispatchers(list: readonly DispatcherInfo[]): void {
    if (this.#topo.setDispatchers(list)) this.#evictionCheck = true
  }

  /** Adds a source or changes its vreplicas; a no-op when nothing changed. */
  upsertVPod(vpod: VPod): void {
    checkVPod(vpod)
    const existing = this.#vpods.get(vpod.key)
    if (existing !== undefined) {
      if (existing.vpod.slot !== vpod.slot) {
        throw new ShoalError(
          ErrorCodes.USAGE,
          `source ${vpod.key} cannot change from ${existing.vpod.slot} to ${vpod.slot} slots`
        )
      }
      const same =
        !existing.deleted &&
        !existing.orphan &&
        existing.vpod.vreplicas === vpod.vreplicas &&
        existing.vpod.maxVReplicas === vpod.maxVReplicas
      existing.vpod = vpod
      existing.deleted = false
      if (!same || existing.orphan) this.#dirty.add(existing)
      existing.orphan = false
      return
    }
    const state = new VPodState(vpod, kindIndex(vpod.slot))
    this.#vpods.set(vpod.key, state)
    this.#dirty.add(state)
  }

  /** Removes a source; the next pass frees its slots and reports it with `deleted: true`. */
  removeVPod(key: string): void {
    const state = this.#vpods.get(key)
    if (state === undefined || state.deleted) return
    state.deleted = true
    state.orphan = false
    this.#dirty.add(state)
  }

  /**
   * Takes placements as the log holds them (a new leader), so nothing is re-placed from scratch: they are kept,
   * except those on dispatchers that are gone, cordoned or draining, or over capacity, which the next pass fixes.
   * Sources may be upserted before or after; `revision` is the highest revision in the log.
   */
  restore(entries: Iterable<RestoreEntry>, options: { readonly revision?: number } = {}): RestoreResult {
    const unknown: string[] = []
    let restored = 0
    for (const { key, slot, placements } of entries) {
      let v = this.#vpods.get(key)
      if (v !== undefined && v.vpod.slot !== slot) {
        throw new ShoalError(
          ErrorCodes.USAGE,
          `restored placements of ${key} use ${slot} slots, the source ${v.vpod.slot} slots`
        )
      }
      if (v === undefined || v.orphan) {
        if (v === undefined) {
          v = new VPodState({ key, slot, vreplicas: 0 }, kindIndex(slot))
          v.orphan = true
          this.#vpods.set(key, v)
        }
        unknown.push(key)
      }
      for (let i = v.slots.length - 1; i >= 0; i--) this.#placer.remove(v, v.slots[i]!, v.counts[i]!)
      for (const p of placements) {
        if (!Number.isSafeInteger(p.vreplicas) || p.vreplicas <= 0) continue
        this.#placer.add(v, this.#topo.ensureSlot(p.podName), p.vreplicas)
      }
      v.pending = undefined
      if (!v.orphan) this.#dirty.add(v)
      restored++
    }
    this.#revision = Math.max(this.#revision, options.revision ?? 0) + (restored > 0 ? 1 : 0)
    this.#evictionCheck = true
    return { restored, unknown }
  }

  /** One scheduling pass over what changed; returns every source whose placements or pending changed. */
  schedule(): PassResult {
    const started = performance.now()
    const pass = ++this.#pass
    const work: VPodState[] = []
    const touch = (v: VPodState): boolean => {
      if (v.stamp === pass) return false
      v.snapshot(pass)
      work.push(v)
      return true
    }
    this.#markEvictions()
    for (const v of this.#dirty) touch(v)
    this.#dirty.clear()
    let removed = 0
    for (const v of work) removed += releaseSource(this.#parts, v)
    const [placed, moved] = this.#placeAll(work, touch)
    const changes: VPodChange[] = []
    for (const v of work) {
      if (!v.orphan && v.changedSinceSnapshot()) changes.push(this.#change(v))
      v.releaseSnapshot()
      if (v.deleted) {
        this.#vpods.delete(v.key)
        this.#waiting.forget(v)
      }
    }
    return this.#passResult(started, changes, { recomputed: work.length, placed, removed: removed + moved })
  }

  /** Marks dirty the sources on dispatchers that went, were cordoned or drained, or shrank below their use. */
  #markEvictions(): void {
    if (!this.#evictionCheck) return
    this.#evictionCheck = false
    for (const v of this.#vpods.values()) {
      for (const s of v.slots) {
        if (this.#topo.mustEvict(v.kind, s)) {
          this.#dirty.add(v)
          break
        }
      }
    }
  }

  /**
   * Places the pass's dirty sources and the waiting ones whose retry is due (`touch` adds those to the work);
   * returns [placed, removed].
   */
  #placeAll(work: VPodState[], touch: (v: VPodState) => boolean): [number, number] {
    const topo = this.#topo
    let placed = 0
    let removed = 0
    const place = (v: VPodState): number => {
      const [p, r] = placeSource(this.#parts, v)
      placed += p
      removed += r
      return p
    }
    const dirtyCount = work.length
    // Pending and one-zone sources first, in the order they became so: they have waited longest. Sources already
    // examined by this pass are queued again only in the later rounds.
    for (const v of this.#waiting.retries(touch)) place(v)
    for (let i = 0; i < dirtyCount; i++) place(work[i]!)
    // Moves that restored availability freed slots in the zones they left: let what still waits use them.
    for (let round = 0; round < 8; round++) {
      const retries = this.#waiting.retries(v => touch(v) || true)
      if (retries.length === 0) break
      let progress = 0
      for (const v of retries) progress += place(v)
      if (progress === 0) break
    }
    for (const k of [0, 1] as const) if (topo.totalFree[k] === 0) topo.freeIncreased[k] = false
    return [placed, removed]
  }

  /** A pass's result, counting its revision when something changed. */
  #passResult(
    started: number,
    changes: VPodChange[],
    counts: { readonly recomputed: number; readonly placed: number; readonly removed: number }
  ): PassResult {
    if (changes.length > 0) this.#revision++
    return {
      revision: this.#revision,
      changes,
      stats: {
        recomputed: counts.recomputed,
        changed: changes.length,
        placed: counts.placed,
        removed: counts.removed,
        pending: this.#waiting.pendingCount(),
        durationMs: performance.now() - started
      }
    }
  }

  #change(v: VPodState): VPodChange {
    return {
      key: v.key,
      slot: v.vpod.slot,
      deleted: v.deleted,
      target: v.deleted ? 0 : v.target,
      placements: this.#placementsOf(v.slots, v.counts),
      previous: this.#placementsOf(v.prevSlots, v.prevCounts),
      pending: v.pending
    }
  }

  #placementsOf(slots: readonly number[], counts: readonly number[]): readonly Placement[] {
    if (slots.length === 0) return EMPTY_PLACEMENTS
    const ids = this.#topo.ids
    const out = new Array<Placement>(slots.length)
    for (let i = 0; i < slots.length; i++) out[i] = { podName: ids[slots[i]!]!, vreplicas: counts[i]! }
    return out
  }

  /** A source's placements, sorted by dispatcher ordinal; undefined for an unknown source. */
  placements(key: string): readonly Placement[] | undefined {
    const v = this.#vpods.get(key)
    return v === undefined || v.deleted || v.orphan ? undefined : this.#placementsOf(v.slots, v.counts)
  }

  /** A source's pending vreplicas and why, as of the last pass; undefined when none wait. */
  pending(key: string): PendingInfo | undefined {
    return this.#vpods.get(key)?.pending
  }

  /** The keys of every source the scheduler holds. */
  *keys(): IterableIterator<string> {
    for (const v of this.#vpods.values()) if (!v.deleted && !v.orphan) yield v.key
  }

  /** Vreplicas on one dispatcher, by slot kind; undefined for a dispatcher never seen. */
  used(dispatcherId: string): Readonly<Record<SlotKind, number>> | undefined {
    const s = this.#topo.slot(dispatcherId)
    if (s === undefined) return undefined
    return { consumer: this.#topo.used[0][s]!, schedule: this.#topo.used[1][s]! }
  }

  /** Totals: sources, dispatchers, capacity and use per slot kind, pending by reason. */
  summary(): SchedulerSummary {
    const topo = this.#topo
    const pendingFor = (k: KindIndex, reason: PendingInfo['reason']) => this.#waiting.pendingCount(k, reason)
    const used: [number, number] = [0, 0]
    for (const k of [0, 1] as const) for (let s = 0; s < topo.slotCount; s++) used[k] += topo.used[k][s]!
    const byKind = (f: (k: KindIndex) => number) => ({ consumer: f(0), schedule: f(1) })
    return {
      sources: [...this.keys()].length,
      dispatchers: topo.presentCount,
      capacity: byKind(k => topo.totalCap[k]),
      used: byKind(k => used[k]),
      pendingForCapacity: byKind(k => pendingFor(k, 'InsufficientCapacity')),
      pendingUnschedulable: byKind(k => pendingFor(k, 'Unschedulable'))
    }
  }

  /** The balancedness score, 0–100 (docs/scheduler.md defines it). */
  balancedness(): number {
    return this.balancednessParts().score
  }

  /** The balancedness score and its parts. */
  balancednessParts(): Balancedness {
    return computeBalancedness(this.#topo, this.#vpods.values(), this.#config.balancedness)
  }

  /**
   * Moves that raise the balancedness score, computed from the current revision; nothing moves until the proposal
   * is applied. Throws SHOAL_CONFLICT when changes wait for a pass: call schedule() first.
   */
  proposeRebalance(options: RebalanceOptions = {}): RebalanceProposal {
    if (this.dirty) {
      throw new ShoalError(ErrorCodes.CONFLICT, 'changes are waiting for a scheduling pass: call schedule() first', {
        retriable: true
      })
    }
    const plan = planRebalance(
      {
        topo: this.#topo,
        placer: this.#placer,
        vpods: this.#vpods,
        score: () => this.balancedness()
      },
      options
    )
    return { revision: this.#revision, ...plan }
  }

  /**
   * Makes exactly the moves of a proposal, in one step. Throws SHOAL_CONFLICT, changing nothing, when the proposal
   * was computed from another revision or a move no longer fits (its source or dispatchers changed).
   */
  applyRebalance(proposal: RebalanceProposal): PassResult {
    const started = performance.now()
    if (proposal.revision !== this.#revision) {
      throw new ShoalError(
        ErrorCodes.CONFLICT,
        `the rebalance proposal is stale: computed at revision ${proposal.revision}, the scheduler is at revision ${this.#revision}`
      )
    }
    // Check the end state first, so a refused proposal changes nothing.
    const delta = checkProposal(this.#topo, this.#vpods, proposal)
    const pass = ++this.#pass
    const changes: VPodChange[] = []
    let moved = 0
    for (const [v, d] of delta) {
      v.snapshot(pass)
      for (const [s, change] of d) if (change < 0) this.#placer.remove(v, s, -change)
      for (const [s, change] of d) {
        if (change > 0) {
          this.#placer.add(v, s, change)
          moved += change
        }
      }
      this.#waiting.trackZones(v)
      if (v.changedSinceSnapshot()) changes.push(this.#change(v))
      v.releaseSnapshot()
    }
    return this.#passResult(started, changes, { recomputed: delta.size, placed: moved, removed: moved })
  }
}
