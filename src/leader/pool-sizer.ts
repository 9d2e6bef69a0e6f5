import { MAX_POOL_SIZE, decidePool, stabilize } from '../pool/index.ts'
import type { PoolDecision, PoolMember } from '../pool/index.ts'
import type { Scheduler } from '../scheduler/index.ts'
import type { ResourceStore } from '../store/index.ts'
import { cordonedIn, poolMembers } from './dispatcher-states.ts'
import type { MembersSource, PoolOptions } from './options.ts'
import type { Log } from '../log/index.ts'

/** The pool as `GET /shoal/v1/pool` shows it: the decision, whether a supervisor acts on it, and the members. */
export type PoolView = PoolDecision & {
  readonly managed: boolean
  readonly members: ReadonlyArray<PoolMember & { readonly draining: boolean }>
}

export const DEFAULT_POOL_STABILIZATION_MS = 30_000

/** What a PoolSizer reads and whom it tells. */
export interface PoolSizerOptions {
  /** Absent: the pool is decided on (and shown) but not managed: nothing drains, nobody is told. */
  readonly pool: PoolOptions | undefined
  readonly members: MembersSource
  readonly store: Pick<ResourceStore, 'snapshot'>
  readonly scheduler: Pick<Scheduler, 'used' | 'summary'>
  readonly log: Log
  /** Told when the set of dispatchers to drain changed (the scheduler must see them as draining). */
  readonly onDraining: () => void
}

/**
 * A term's pool sizing (docs/pool.md): decides the pool's size from the scheduler's load about once a second and
 * after every pass, drains what a managed pool gives up, and tells the pool's writer.
 */
export class PoolSizer {
  readonly #options: PoolSizerOptions
  /** Dispatchers the pool is emptying (state `draining` for the scheduler), and its recent sizes. */
  #draining: ReadonlySet<string> = new Set()
  #recent: ReadonlyArray<{ readonly atMs: number; readonly desired: number }> = []
  #timer: NodeJS.Timeout | undefined
  #stopped = false

  constructor(options: PoolSizerOptions) {
    this.#options = options
  }

  /** The dispatchers the pool drains now. */
  get draining(): ReadonlySet<string> {
    return this.#draining
  }

  start(): void {
    // The stabilisation window ends by itself, and heartbeats say when a drained contract has been applied.
    this.#timer = setInterval(() => this.refresh(), 1_000)
    this.#timer.unref()
  }

  stop(): void {
    this.#stopped = true
    clearInterval(this.#timer)
  }

  /** The pool's size as the load needs it, and why (`GET /shoal/v1/pool`). */
  view(): PoolView {
    const members = this.#members()
    const decision = this.#decide(members, performance.now(), false)
    const draining = new Set(decision.draining)
    return {
      ...decision,
      managed: this.#options.pool !== undefined,
      members: members.map(m => ({ ...m, draining: draining.has(m.id) }))
    }
  }

  /** Decides the pool; a managed pool drains what the decision says, and its writer is told. */
  refresh(): void {
    const pool = this.#options.pool
    if (this.#stopped || pool === undefined) return
    const decision = this.#decide(this.#members(), performance.now(), true)
    const draining = new Set(decision.draining)
    if (draining.size !== this.#draining.size || [...draining].some(id => !this.#draining.has(id))) {
      this.#options.log('info', 'the pool drains dispatchers', { draining: [...draining], reason: decision.message })
      this.#draining = draining
      this.#options.onDraining()
    }
    try {
      pool.onDecision?.(decision)
    } catch (error) {
      this.#options.log('warn', 'the pool decision could not be acted on', { error: String(error) })
    }
  }

  #members(): PoolMember[] {
    const { members, store, scheduler } = this.#options
    return poolMembers(members.liveDispatchers(), cordonedIn(store), id => scheduler.used(id))
  }

  /** The pure decision over the term's state; `remember` moves the stabilisation window on. */
  #decide(members: readonly PoolMember[], nowMs: number, remember: boolean): PoolDecision {
    const pool = this.#options.pool
    const summary = this.#options.scheduler.summary()
    const input = {
      bounds: pool?.bounds ?? { min: 0, max: MAX_POOL_SIZE },
      members,
      pendingForCapacity: summary.pendingForCapacity,
      pendingUnschedulable: summary.pendingUnschedulable,
      ...(pool?.capacity === undefined ? {} : { capacity: pool.capacity })
    }
    const raw = decidePool(input)
    const window = stabilize(this.#recent, raw.desired, nowMs, pool?.stabilizationMs ?? DEFAULT_POOL_STABILIZATION_MS)
    if (remember) this.#recent = window.recent
    return window.desired > raw.desired ? decidePool({ ...input, atLeast: window.desired }) : raw
  }
}
