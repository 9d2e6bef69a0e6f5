// How many new connections to one sink origin may be unproven at once, and when the next may be opened. Pure: the
// caller says what happened and when (performance.now()); `PacedConnector` does the I/O.
//
// A connection is unproven from the moment it is opened until the sink shows it accepted it (an answer byte, or
// the request bytes acknowledged by its kernel). A sink with a small accept backlog (Python's http.server: 5)
// silently drops the handshakes of a burst past it, and the client then holds connections it believes open that
// the server never accepted. So new connections go out in a window, as TCP's congestion window does: it grows
// by one for each connection proven promptly (doubling every round); it halves when a connection was slow to
// open or to be proven (a dropped handshake packet is sent again after a second), is found never accepted, or
// times out; and connects that are refused outright wait a growing pause before the next one.

/** The window's bounds and pauses. */
export interface ConnectWindowOptions {
  /** Unproven connections allowed at first. */
  readonly initial: number
  /** The window never grows past this. */
  readonly max: number
  /** The first pause after a refused connect; it doubles with each refusal in a row. */
  readonly minPauseMs: number
  /** The longest pause between connects to an origin that refuses them. */
  readonly maxPauseMs: number
}

export const CONNECT_WINDOW_DEFAULTS: ConnectWindowOptions = Object.freeze({
  initial: 2,
  // The SinkClient sets it to the origin's connection cap.
  max: 32,
  minPauseMs: 100,
  maxPauseMs: 2_000
})

/** How a connection that was opened here ended up. */
export type ConnectVerdict =
  /** The sink showed it accepted the connection, promptly. */
  | 'proven'
  /** The sink accepted the connection, but only after a handshake packet was dropped and sent again. */
  | 'proven-late'
  /** Open, but the sink never acknowledged the request written into it: its accept queue dropped it. */
  | 'never-accepted'
  /** The connect itself timed out (the sink's backlog dropped the handshake, or the host is unreachable). */
  | 'timed-out'
  /** Refused: nothing listens there (a sink restarting), or the connect failed at once otherwise. */
  | 'refused'
  /** Closed before it was proven, for no reason that says anything about the backlog. */
  | 'closed'

/** The window of one origin. */
export class ConnectWindow {
  readonly #options: ConnectWindowOptions
  #window: number
  #unproven = 0
  #pauseMs = 0
  #notBefore = Number.NEGATIVE_INFINITY
  #peak = 0

  constructor(options: ConnectWindowOptions = CONNECT_WINDOW_DEFAULTS) {
    if (!(options.initial >= 1 && options.max >= options.initial)) {
      throw new RangeError(`connect window ${options.initial}..${options.max} is not 1 <= initial <= max`)
    }
    this.#options = options
    this.#window = options.initial
  }

  /** Unproven connections allowed now. */
  get window(): number {
    return this.#window
  }

  /** Connections opened and not yet proven (or failed). */
  get unproven(): number {
    return this.#unproven
  }

  /** The most unproven connections there ever were at once (never above the largest window). */
  get peakUnproven(): number {
    return this.#peak
  }

  /** When the next connect may start (a pause after refusals); -Infinity: no pause. */
  get notBefore(): number {
    return this.#notBefore
  }

  /** Whether a connect may start at `now`. */
  mayOpen(now: number): boolean {
    return this.#unproven < this.#window && now >= this.#notBefore
  }

  /** A connect starts; the caller checked `mayOpen`. Throws if it did not: the window is the invariant. */
  opened(now: number): void {
    if (!this.mayOpen(now)) throw new Error(`connect window: ${this.#unproven} of ${this.#window} open, or paused`)
    this.#unproven++
    if (this.#unproven > this.#peak) this.#peak = this.#unproven
  }

  /** A connection opened here was proven or failed, at `now`. */
  settled(verdict: ConnectVerdict, now: number): void {
    if (this.#unproven === 0) throw new Error('connect window: settled with no connection open')
    this.#unproven--
    switch (verdict) {
      case 'proven':
        this.#window = Math.min(this.#options.max, this.#window + 1)
        this.#pauseMs = 0
        this.#notBefore = Number.NEGATIVE_INFINITY
        return
      case 'proven-late':
        this.#pauseMs = 0
        this.#notBefore = Number.NEGATIVE_INFINITY
        this.#window = Math.max(1, Math.floor(this.#window / 2))
        return
      case 'never-accepted':
      case 'timed-out':
        this.#window = Math.max(1, Math.floor(this.#window / 2))
        return
      case 'refused':
        this.#pauseMs =
          this.#pauseMs === 0 ? this.#options.minPauseMs : Math.min(this.#options.maxPauseMs, this.#pauseMs * 2)
        this.#notBefore = now + this.#pauseMs
        return
      case 'closed':
        return
    }
  }
}
