/**
 * Another machine's clock as far as its timestamps tell: the newest time observed plus the local monotonic time
 * elapsed since it was observed. The dispatchers' liveness is judged so on the broker's clock (heartbeats' append
 * times), never the local wall clock, so a skewed host judges as well as any other.
 */
export class RemoteClock {
  readonly #clock: () => number
  #newest: { readonly remoteMs: number; readonly seenAt: number } | undefined

  /** `clock`: a local monotonic clock in milliseconds (`performance.now`; tests pass their own). */
  constructor(clock: () => number) {
    this.#clock = clock
  }

  /** A timestamp read now; an older one than the newest is ignored. */
  observe(remoteMs: number): void {
    if (this.#newest === undefined || remoteMs >= this.#newest.remoteMs) {
      this.#newest = { remoteMs, seenAt: this.#clock() }
    }
  }

  /** The newest timestamp observed; undefined before the first. */
  newest(): number | undefined {
    return this.#newest?.remoteMs
  }

  /** Now on the remote clock; undefined before the first timestamp. */
  now(): number | undefined {
    return this.#newest && this.#newest.remoteMs + (this.#clock() - this.#newest.seenAt)
  }
}
