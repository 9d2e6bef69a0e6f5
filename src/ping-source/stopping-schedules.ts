import { RELEASE_DRAIN_MS, finishRelease } from './hand-over.ts'
import type { Stopping } from './hand-over.ts'
import type { TickLedger } from './tick-ledger.ts'

/**
 * Schedules that left a dispatcher while ticks of theirs were in flight: each is released when its last tick is
 * answered, or below the ticks still in flight once its drain time is past.
 */
export class StoppingSchedules {
  readonly #ledger: TickLedger
  readonly #now: () => number
  readonly #onDue: () => void
  readonly #stopping = new Map<string, Stopping>()
  #timer: NodeJS.Timeout | undefined

  /** `onDue`: some were released at the end of their drain time (the watermark moved). */
  constructor(options: { readonly ledger: TickLedger; readonly now: () => number; readonly onDue: () => void }) {
    this.#ledger = options.ledger
    this.#now = options.now
    this.#onDue = options.onDue
  }

  /** The schedules stopping, for the heartbeat's watermark. */
  get entries(): ReadonlyMap<string, Stopping> {
    return this.#stopping
  }

  has(key: string): boolean {
    return this.#stopping.has(key)
  }

  add(key: string, stopping: Stopping): void {
    this.#stopping.set(key, stopping)
    if (this.#timer === undefined) {
      this.#timer = setTimeout(() => this.#finishDue(), RELEASE_DRAIN_MS + 10)
      this.#timer.unref()
    }
  }

  /** Its ticks in flight were answered (or it came back): released now. */
  finish(key: string, now: number): void {
    const stopping = this.#stopping.get(key)
    if (stopping === undefined) return
    this.#stopping.delete(key)
    finishRelease(this.#ledger, key, stopping, now)
  }

  /** Releases every one now: the plane is closing. */
  finishAll(): void {
    clearTimeout(this.#timer)
    for (const key of [...this.#stopping.keys()]) this.finish(key, this.#now())
  }

  // Schedules stopping past their drain time are released below their ticks still in flight.
  #finishDue(): void {
    this.#timer = undefined
    const now = this.#now()
    let next = Number.POSITIVE_INFINITY
    for (const [key, stopping] of this.#stopping) {
      if (stopping.until <= now) this.finish(key, now)
      else next = Math.min(next, stopping.until)
    }
    if (Number.isFinite(next)) {
      this.#timer = setTimeout(() => this.#finishDue(), next - now + 10)
      this.#timer.unref()
    }
    this.#onDue()
  }
}
