import { CronTicksCache } from './cron-ticks.ts'
import type { CronTicks } from './cron-ticks.ts'
import { DEFAULT_MAX_LATE_TICKS, lateTicks } from './late-policy.ts'
import type { LatePolicy } from './late-policy.ts'
import { TickHeap } from './tick-heap.ts'

/** One schedule as the table runs it. */
export interface ScheduleSpec {
  readonly schedule: string
  /** IANA zone; absent: UTC. */
  readonly timezone?: string
  /** The source's creationTimestamp: no tick before it is ever fired. */
  readonly creationMs: number
  readonly latePolicy: LatePolicy
}

/** A tick to fire: `at` is the nominal time (the event's ce-time); `late` when fired by catch-up. */
export interface Tick {
  readonly key: string
  readonly at: number
  readonly late: boolean
}

/** Ticks a call produced, and the keys whose missed ticks `all` could not fire entirely (maxLateTicks). */
export interface Firing {
  readonly ticks: Tick[]
  readonly truncated: string[]
}

export interface ScheduleTableOptions {
  /** Under `all`, the most missed ticks of one schedule fired in one go (default 100). */
  readonly maxLateTicks?: number
}

const NOTHING_MISSED: Firing = Object.freeze({
  ticks: Object.freeze([]) as unknown as Tick[],
  truncated: Object.freeze([]) as unknown as string[]
})

// What firing needs of a ScheduleSpec (its expression is in `cron`): no spec object kept per schedule.
interface Entry {
  readonly creationMs: number
  readonly latePolicy: LatePolicy
  readonly cron: CronTicks
  /** When it was set: its ticks up to then were handed out (or skipped) by `set`. */
  readonly setAt: number
}

/**
 * The schedules of one dispatcher and their next ticks: pure (times in, ticks out), with ONE heap for all of
 * them, so the caller keeps one timer for the earliest. `through` is how far it has fired: every tick at or
 * before it of every schedule it holds has been handed out (or skipped by the late policy).
 */
export class ScheduleTable {
  readonly #heap = new TickHeap()
  readonly #cache = new CronTicksCache()
  readonly #entries = new Map<string, Entry>()
  readonly #maxLateTicks: number
  #through = Number.NEGATIVE_INFINITY

  constructor(options: ScheduleTableOptions = {}) {
    this.#maxLateTicks = options.maxLateTicks ?? DEFAULT_MAX_LATE_TICKS
    if (!Number.isSafeInteger(this.#maxLateTicks) || this.#maxLateTicks < 1) {
      throw new RangeError(`maxLateTicks ${this.#maxLateTicks} is not a positive integer`)
    }
  }

  get size(): number {
    return this.#entries.size
  }

  /** Every tick at or before this has been handed out, for every schedule held; -Infinity before the first `due`. */
  get through(): number {
    return this.#through
  }

  /** Distinct (schedule, timezone) pairs: what next-tick computations cost. */
  get distinctExpressions(): number {
    return this.#cache.size
  }

  has(key: string): boolean {
    return this.#entries.has(key)
  }

  spec(key: string): ScheduleSpec | undefined {
    const entry = this.#entries.get(key)
    if (entry === undefined) return undefined
    const { schedule, timezone } = entry.cron
    return {
      schedule,
      ...(timezone === 'UTC' ? {} : { timezone }),
      creationMs: entry.creationMs,
      latePolicy: entry.latePolicy
    }
  }

  keys(): IterableIterator<string> {
    return this.#entries.keys()
  }

  /** How far the ticks of `key` have been handed out: `through`, or later if it was set since. */
  firedThrough(key: string): number | undefined {
    const entry = this.#entries.get(key)
    return entry && Math.max(entry.setAt, this.#through)
  }

  /** When the earliest schedule fires next, or undefined when it holds none. */
  nextTime(): number | undefined {
    return this.#heap.peekTime()
  }

  /**
   * Holds `key` under `spec` from `now` on (replacing its previous spec), and returns its missed ticks in
   * (since, now] under its late policy — never one before its creation. Throws SHOAL_INVALID for a schedule
   * that does not parse (validation keeps those out of the store).
   */
  set(key: string, spec: ScheduleSpec, since: number, now: number): Firing {
    const previous = this.#entries.get(key)
    const cron = this.#cache.acquire(spec.schedule, spec.timezone)
    if (previous) this.#cache.release(previous.cron)
    const entry: Entry = { creationMs: spec.creationMs, latePolicy: spec.latePolicy, cron, setAt: now }
    this.#entries.set(key, entry)
    const firing = this.#late(key, entry, since, now)
    this.#heap.set(key, cron.nextAfter(Math.max(now, spec.creationMs - 1)))
    return firing
  }

  delete(key: string): boolean {
    const entry = this.#entries.get(key)
    if (!entry) return false
    this.#entries.delete(key)
    this.#cache.release(entry.cron)
    this.#heap.delete(key)
    return true
  }

  /**
   * The ticks due at `now`, oldest first: each schedule's next tick, plus — when the caller woke too late to
   * fire them one by one (a stalled process) — its further missed ticks under its late policy.
   */
  due(now: number): Firing {
    const ticks: Tick[] = []
    const truncated: string[] = []
    for (;;) {
      const popped = this.#heap.popDue(now)
      if (!popped) break
      const entry = this.#entries.get(popped.key) as Entry
      ticks.push({ key: popped.key, at: popped.time, late: false })
      const missed = this.#late(popped.key, entry, popped.time, now)
      for (const tick of missed.ticks) ticks.push(tick)
      if (missed.truncated.length > 0) truncated.push(popped.key)
      this.#heap.set(popped.key, entry.cron.nextAfter(Math.max(now, popped.time)))
    }
    if (now > this.#through) this.#through = now
    return { ticks, truncated }
  }

  /**
   * After a pause (a fenced dispatcher fires nothing): every schedule's missed ticks in (sinceOf(key), now]
   * under its policy, and each one's next tick after `now`. `through` becomes `now`.
   */
  resume(now: number, sinceOf: (key: string) => number): Firing {
    const ticks: Tick[] = []
    const truncated: string[] = []
    for (const [key, entry] of this.#entries) {
      const missed = this.#late(key, entry, sinceOf(key), now)
      for (const tick of missed.ticks) ticks.push(tick)
      if (missed.truncated.length > 0) truncated.push(key)
      this.#heap.set(key, entry.cron.nextAfter(Math.max(now, entry.creationMs - 1)))
    }
    if (now > this.#through) this.#through = now
    return { ticks, truncated }
  }

  #late(key: string, entry: Entry, since: number, now: number): Firing {
    const after = Math.max(since, entry.creationMs - 1)
    const missed = lateTicks(entry.cron, after, now, entry.latePolicy, this.#maxLateTicks)
    if (missed.ticks.length === 0 && !missed.truncated) return NOTHING_MISSED
    return {
      ticks: missed.ticks.map(at => ({ key, at, late: true })),
      truncated: missed.truncated ? [key] : []
    }
  }
}
