import type { Tick } from './schedule-table.ts'

/** The first slice goes out in the turn the ticks came in; the rest, this many per event-loop turn. */
export const DEFAULT_TICK_SLICE = 256

export interface TickFeederOptions {
  /** Hands one tick on (to the Deliverer); called in slices, never for a tick cleared before its turn. */
  readonly handOut: (tick: Tick) => void
  /** Ticks handed out per event-loop turn (default 256). */
  readonly slice?: number
  /** Runs `callback` in a later turn of the event loop, after I/O (default setImmediate). */
  readonly defer?: (callback: () => void) => void
}

/**
 * Hands a burst of ticks on in slices across event-loop turns. A top-of-the-minute burst of 10,000 ticks handed
 * on in one go is half a second of synchronous work before the first request can leave the process and before
 * any answer is read; in slices the first requests go out at once, and answers free connections while the rest
 * of the burst is still being prepared. Order is kept (oldest first within a firing).
 */
export class TickFeeder {
  readonly #handOut: (tick: Tick) => void
  readonly #slice: number
  readonly #defer: (callback: () => void) => void
  #queue: Tick[] = []
  #head = 0
  #scheduled = false
  #idle: Array<() => void> = []

  constructor(options: TickFeederOptions) {
    this.#handOut = options.handOut
    this.#slice = options.slice ?? DEFAULT_TICK_SLICE
    if (!Number.isSafeInteger(this.#slice) || this.#slice < 1) {
      throw new RangeError(`slice ${this.#slice} is not a positive integer`)
    }
    this.#defer = options.defer ?? (callback => setImmediate(callback))
  }

  /** Ticks waiting for their turn. */
  get pending(): number {
    return this.#queue.length - this.#head
  }

  /** Queues `ticks` and hands out a slice now. */
  push(ticks: readonly Tick[]): void {
    if (ticks.length === 0) return
    for (const tick of ticks) this.#queue.push(tick)
    if (!this.#scheduled) this.#run()
  }

  /** Drops every tick not handed out yet (the caller keeps them open: they are fired again). */
  clear(): void {
    this.#queue = []
    this.#head = 0
    this.#settle()
  }

  /** Resolves once nothing is waiting. */
  idle(): Promise<void> {
    if (this.pending === 0) return Promise.resolve()
    return new Promise(resolve => this.#idle.push(resolve))
  }

  #run(): void {
    this.#scheduled = false
    const queue = this.#queue
    const end = Math.min(queue.length, this.#head + this.#slice)
    while (this.#head < end) {
      const tick = queue[this.#head] as Tick
      this.#head++
      this.#handOut(tick)
      // handOut may have cleared the queue.
      if (this.#queue !== queue) return
    }
    if (this.#head < queue.length) {
      this.#scheduled = true
      this.#defer(() => {
        if (this.#scheduled) this.#run()
      })
      return
    }
    this.#queue = []
    this.#head = 0
    this.#settle()
  }

  #settle(): void {
    this.#scheduled = false
    const idle = this.#idle
    this.#idle = []
    for (const resolve of idle) resolve()
  }
}
