import { ErrorCodes, ShoalError } from '../errors/index.ts'
import type { SlotKind } from '../store/index.ts'
import { computeBalancedness } from './balance.ts'
import { parseSchedulerConfig } from './config.ts'
import type { SchedulerConfig } from './config.ts'
import { FILTERED, NO_CAPACITY, Placer } from './placer.ts'
import { DEFAULT_PROFILE, SCHEDULER_PROFILES } from './profiles.ts'
import { planRebalance } from './rebalance.ts'
import type { RebalanceOptions } from './rebalance.ts'
import { createRegistry } from './registry.ts'
import type { PluginRegistry } from './registry.ts'
import { resolvePlugins } from './resolve-plugins.ts'
import type { ResolvedPlugins } from './resolve-plugins.ts'
import { NONE, SLOT_KINDS, Topology, kindIndex } from './topology.ts'
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
import { VPodState, samePending } from './vpod-state.ts'

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
  readonly #plugins: ResolvedPlugins
  readonly #placer: Placer
  readonly #config: SchedulerConfig
  readonly #vpods = new Map<string, VPodState>()
  readonly #dirty = new Set<VPodState>()
  readonly #pendingSets: [Set<VPodState>, Set<VPodState>] = [new Set(), new Set()]
  /** Sources of two or more vreplicas all in one zone: moved when another zone gets room. */
  readonly #concentrated: [Set<VPodState>, Set<VPodState>] = [new Set(), new Set()]
  #evictionCheck = false
  #revision = 0
  #pass = 0

  constructor(options: SchedulerOptions = {}) {
    const registry = options.registry ?? createRegistry()
    this.#config = options.config ?? parseSchedulerConfig(SCHEDULER_PROFILES[DEFAULT_PROFILE], registry)
    this.#plugins = resolvePlugins(this.#config, registry)
    this.#placer = new Placer(this.#topo, this.#plugins)
  }

  /** Grows whenever placements change (a pass, a restore, an applied rebalance). */
  get revision(): number {
    return this.#revision
  }

  /** Whether a call to schedule() has work to do. */
  get dirty(): boolean {
    return this.#dirty.size > 0 || this.#evictionCheck || this.#retryDue(0) || this.#retryDue(1)
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
    const topo = this.#topo
    const work: VPodState[] = []
    const touch = (v: VPodState): boolean => {
      if (v.stamp === pass) return false
      v.snapshot(pass)
      work.push(v)
      return true
    }
    if (this.#evictionCheck) {
      this.#evictionCheck = false
      for (const v of this.#vpods.values()) {
        for (const s of v.slots) {
          if (topo.mustEvict(v.kind, s)) {
            this.#dirty.add(v)
            break
          }
        }
      }
    }
    for (const v of this.#dirty) touch(v)
    this.#dirty.clear()

    let removed = 0
    for (const v of work) removed += this.#release(v)

    let placed = 0
    const dirtyCount = work.length
    // Sources already examined by this pass are queued again only in the later rounds.
    const queueRetries = (again: boolean) => {
      const queued: VPodState[] = []
      for (const k of [0, 1] as const) {
        if (!this.#retryDue(k)) continue
        topo.freeIncreased[k] = false
        for (const v of this.#pendingSets[k]) if (touch(v) || again) queued.push(v)
        if (topo.schedulableZones[k] < 2) continue
        for (const v of this.#concentrated[k]) if (touch(v) || again) queued.push(v)
      }
      return queued
    }
    // Pending and one-zone sources first, in the order they became so: they have waited longest.
    let retries = queueRetries(false)
    const first = dirtyCount
    for (const v of retries) {
      const [p, r] = this.#place(v)
      placed += p
      removed += r
    }
    for (let i = 0; i < first; i++) {
      const [p, r] = this.#place(work[i]!)
      placed += p
      removed += r
    }
    // Moves that restored availability freed slots in the zones they left: let what still waits use them.
    for (let round = 0; round < 8; round++) {
      retries = queueRetries(true)
      if (retries.length === 0) break
      let progress = 0
      for (const v of retries) {
        const [p, r] = this.#place(v)
        placed += p
        removed += r
        progress += p
      }
      if (progress === 0) break
    }
    for (const k of [0, 1] as const) if (topo.totalFree[k] === 0) topo.freeIncreased[k] = false

    const changes: VPodChange[] = []
    for (const v of work) {
      if (!v.orphan && v.changedSinceSnapshot()) changes.push(this.#change(v))
      v.releaseSnapshot()
      if (v.deleted) {
        this.#vpods.delete(v.key)
        this.#pendingSets[v.kind].delete(v)
        this.#concentrated[v.kind].delete(v)
      }
    }
    if (changes.length > 0) this.#revision++
    return {
      revision: this.#revision,
      changes,
      stats: {
        recomputed: work.length,
        changed: changes.length,
        placed,
        removed,
        pending: this.#pendingTotal(),
        durationMs: performance.now() - started
      }
    }
  }

  #retryDue(k: KindIndex): boolean {
    return (
      this.#topo.freeIncreased[k] &&
      this.#topo.totalFree[k] > 0 &&
      (this.#pendingSets[k].size > 0 || this.#concentrated[k].size > 0)
    )
  }

  /** Frees what must go: all of a deleted source, vreplicas on lost dispatchers, the surplus after a shrink. */
  #release(v: VPodState): number {
    const topo = this.#topo
    const placer = this.#placer
    const before = v.placed
    if (v.deleted) {
      for (let i = v.slots.length - 1; i >= 0; i--) placer.remove(v, v.slots[i]!, v.counts[i]!)
      v.pending = undefined
      return before
    }
    const k = v.kind
    for (let i = v.slots.length - 1; i >= 0; i--) {
      const s = v.slots[i]!
      if (!topo.schedulable[s]) placer.remove(v, s, v.counts[i]!)
      else {
        const over = topo.used[k][s]! - topo.cap[k][s]!
        if (over > 0) placer.remove(v, s, over)
      }
    }
    if (v.orphan) return before - v.placed
    v.target = this.#targetOf(v.vpod)
    if (v.placed > v.target) {
      placer.load(v)
      while (v.placed > v.target) placer.remove(v, placer.chooseRemoval(v), 1)
      placer.unload(v)
    }
    return before - v.placed
  }

  /** Places up to the target, and restores availability; returns [placed, removed]. */
  #place(v: VPodState): [number, number] {
    if (v.deleted || v.orphan) return [0, 0]
    const topo = this.#topo
    const placer = this.#placer
    const k = v.kind
    const before = v.placed
    let failure = 0
    let moved = 0
    const need = v.target - v.placed
    const concentrated = v.placed >= 2 && isConcentrated(topo, v)
    if (need > 0 && topo.totalFree[k] === 0) failure = NO_CAPACITY
    else if (need > 0 || (concentrated && topo.schedulableZones[k] >= 2)) {
      placer.load(v)
      while (v.placed < v.target) {
        const s = placer.placeOne(v)
        if (s < 0) {
          failure = s
          break
        }
        placer.add(v, s, 1)
      }
      const sole = v.placed >= 2 ? placer.soleZone() : NONE
      if (sole !== NONE && topo.schedulableZones[k] >= 2) {
        const s = placer.placeOne(v, { zone: z => z !== sole })
        if (s >= 0) {
          placer.add(v, s, 1)
          placer.remove(
            v,
            placer.chooseRemoval(v, r => topo.zoneOf[r] === sole),
            1
          )
          moved = 1
        }
      }
      placer.unload(v)
    }
    const pending = v.target - v.placed
    const info = pending > 0 ? this.#pendingInfo(v, pending, failure) : undefined
    if (!samePending(v.pending, info)) v.pending = info
    if (pending > 0) this.#pendingSets[k].add(v)
    else this.#pendingSets[k].delete(v)
    if (v.placed >= 2 && isConcentrated(topo, v)) this.#concentrated[k].add(v)
    else this.#concentrated[k].delete(v)
    return [v.placed - before + moved, moved]
  }

  #pendingInfo(v: VPodState, count: number, failure: number): PendingInfo {
    const slot = v.vpod.slot
    const tail = `${count} of ${v.target} vreplicas unplaced`
    if (failure === FILTERED) {
      const by = this.#placer.refusedBy ?? 'the filters'
      return { count, reason: 'Unschedulable', message: `no dispatcher with free ${slot} slots passes ${by}: ${tail}` }
    }
    return { count, reason: 'InsufficientCapacity', message: `insufficient ${slot} capacity: ${tail}` }
  }

  #targetOf(vpod: VPod): number {
    let target = vpod.vreplicas
    for (const f of this.#plugins.limits)
      target = Math.min(target, Math.max(0, Math.floor(f.plugin.limit!(vpod, f.args))))
    return target
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

  #pendingTotal(): number {
    let total = 0
    for (const set of this.#pendingSets) for (const v of set) total += v.pending?.count ?? 0
    return total
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
    const pendingFor = (k: KindIndex, reason: PendingInfo['reason']) => {
      let total = 0
      for (const v of this.#pendingSets[k]) if (v.pending?.reason === reason) total += v.pending.count
      return total
    }
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
    const topo = this.#topo
    // Check the end state first, so a refused proposal changes nothing.
    const delta = new Map<VPodState, Map<number, number>>()
    const slotDelta: [Map<number, number>, Map<number, number>] = [new Map<number, number>(), new Map<number, number>()]
    for (const move of proposal.moves) {
      const v = this.#vpods.get(move.source)
      const from = topo.slot(move.from)
      const to = topo.slot(move.to)
      const problem =
        v === undefined || v.deleted || v.orphan
          ? 'the source is gone'
          : from === undefined || to === undefined || !topo.schedulable[to]
            ? 'a dispatcher is gone or not schedulable'
            : !Number.isSafeInteger(move.vreplicas) || move.vreplicas <= 0
              ? 'vreplicas must be a positive integer'
              : undefined
      if (problem !== undefined || v === undefined || from === undefined || to === undefined) {
        throw new ShoalError(
          ErrorCodes.CONFLICT,
          `rebalance move of ${move.source} from ${move.from} to ${move.to}: ${problem}`
        )
      }
      const d = delta.get(v) ?? new Map<number, number>()
      delta.set(v, d)
      d.set(from, (d.get(from) ?? 0) - move.vreplicas)
      d.set(to, (d.get(to) ?? 0) + move.vreplicas)
      const sd = slotDelta[v.kind]
      sd.set(from, (sd.get(from) ?? 0) - move.vreplicas)
      sd.set(to, (sd.get(to) ?? 0) + move.vreplicas)
    }
    for (const [v, d] of delta) {
      for (const [s, change] of d) {
        if (v.countOn(s) + change < 0) {
          throw new ShoalError(
            ErrorCodes.CONFLICT,
            `rebalance moves more of ${v.key} off ${topo.ids[s]} than it holds there`
          )
        }
      }
    }
    for (const k of [0, 1] as const) {
      for (const [s, change] of slotDelta[k]) {
        if (change > 0 && topo.used[k][s]! + change > topo.cap[k][s]!) {
          throw new ShoalError(
            ErrorCodes.CONFLICT,
            `rebalance would put ${topo.ids[s]} over its ${SLOT_KINDS[k]} capacity`
          )
        }
      }
    }
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
      if (v.placed >= 2 && isConcentrated(topo, v)) this.#concentrated[v.kind].add(v)
      else this.#concentrated[v.kind].delete(v)
      if (v.changedSinceSnapshot()) changes.push(this.#change(v))
      v.releaseSnapshot()
    }
    if (changes.length > 0) this.#revision++
    return {
      revision: this.#revision,
      changes,
      stats: {
        recomputed: delta.size,
        changed: changes.length,
        placed: moved,
        removed: moved,
        pending: this.#pendingTotal(),
        durationMs: performance.now() - started
      }
    }
  }
}

function isConcentrated(topo: Topology, v: VPodState): boolean {
  const z = topo.zoneOf[v.slots[0]!]!
  for (let i = 1; i < v.slots.length; i++) if (topo.zoneOf[v.slots[i]!] !== z) return false
  return true
}

function checkVPod(vpod: VPod): void {
  const problems: string[] = []
  if (typeof vpod.key !== 'string' || vpod.key === '') problems.push('key must be a non-empty string')
  if (vpod.slot !== 'consumer' && vpod.slot !== 'schedule') problems.push('slot must be consumer or schedule')
  if (!Number.isSafeInteger(vpod.vreplicas) || vpod.vreplicas < 0)
    problems.push('vreplicas must be a non-negative integer')
  if (vpod.maxVReplicas !== undefined && (!Number.isSafeInteger(vpod.maxVReplicas) || vpod.maxVReplicas < 0)) {
    problems.push('maxVReplicas must be a non-negative integer')
  }
  if (problems.length > 0) throw new ShoalError(ErrorCodes.USAGE, `source ${String(vpod.key)}: ${problems.join('; ')}`)
}
