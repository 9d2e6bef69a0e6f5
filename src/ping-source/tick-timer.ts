import type { Firing, ScheduleTable } from './schedule-table.ts'

export interface TickTimerOptions {
  readonly table: ScheduleTable
  /** Called with each batch of due ticks, synchronously from the timer. */
  readonly onFiring: (firing: Firing) => void
  /** Wall clock in epoch milliseconds (default Date.now): cron ticks are wall-clock times. */
  readonly now?: () => number
  /**
   * The longest single sleep (default 1 s): a wall clock stepped by NTP, or a suspended host, is noticed within
   * this, and `through` (the heartbeat watermark) advances at least this often.
   */
  readonly maxSleepMs?: number
  readonly setTimer?: (callback: () => void, ms: number) => unknown
  readonly clearTimer?: (handle: unknown) => void
}

/**
 * The one timer of a dispatcher's schedules: a single setTimeout for the earliest tick of the table (or the
 * longest sleep), however many schedules there are.
 */
export class TickTimer {
  readonly #table: ScheduleTable
  readonly #onFiring: (firing: Firing) => void
  readonly #now: () => number
  readonly #maxSleepMs: number
  readonly #setTimer: (callback: () => void, ms: number) => unknown
  readonly #clearTimer: (handle: unknown) => void
  #handle: unknown
  #armedFor = Number.POSITIVE_INFINITY
  #running = false

  constructor(options: TickTimerOptions) {
    this.#table = options.table
    this.#onFiring = options.onFiring
    this.#now = options.now ?? Date.now
    this.#maxSleepMs = options.maxSleepMs ?? 1_000
    this.#setTimer = options.setTimer ?? ((callback, ms) => setTimeout(callback, ms))
    this.#clearTimer = options.clearTimer ?? (handle => clearTimeout(handle as NodeJS.Timeout))
  }

  get running(): boolean {
    return this.#running
  }

  /** Fires what is due now and keeps firing; a no-op when running. */
  start(): void {
    if (this.#running) return
    this.#running = true
    this.#wake()
  }

  /** Fires nothing more until started again. */
  stop(): void {
    this.#running = false
    this.#disarm()
  }

  /** The table changed: wake earlier if its earliest tick is now earlier than the timer is set for. */
  rearm(): void {
    if (!this.#running) return
    const next = this.#table.nextTime()
    if (next !== undefined && next < this.#armedFor) this.#arm()
  }

  #wake(): void {
    this.#handle = undefined
    this.#armedFor = Number.POSITIVE_INFINITY
    if (!this.#running) return
    const firing = this.#table.due(this.#now())
    if (firing.ticks.length > 0 || firing.truncated.length > 0) this.#onFiring(firing)
    if (this.#running) this.#arm()
  }

  #arm(): void {
    this.#disarm()
    const now = this.#now()
    const next = this.#table.nextTime()
    const sleep = Math.max(0, Math.min(this.#maxSleepMs, next === undefined ? this.#maxSleepMs : next - now))
    this.#armedFor = now + sleep
    this.#handle = this.#setTimer(() => this.#wake(), sleep)
  }

  #disarm(): void {
    if (this.#handle !== undefined) this.#clearTimer(this.#handle)
    this.#handle = undefined
    this.#armedFor = Number.POSITIVE_INFINITY
  }
}
