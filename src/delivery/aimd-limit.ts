// The adaptive concurrency of one sink: AIMD (additive increase, multiplicative decrease), pure. An overload
// signal halves the limit, at most once per round trip; answers that stay fast add 1/limit each (about +1 per
// round trip), and only while the limit is in use. See docs/delivery.md "Per-sink flow control" for why AIMD.

/** How the adaptive limit moves. */
export interface AimdOptions {
  /** The floor: a sink always gets this many requests in flight. */
  readonly min: number
  /** The ceiling (the explicit limit, or the connection cap per origin). */
  readonly max: number
  /** The limit is multiplied by this on an overload signal (0 < factor < 1). */
  readonly decreaseFactor: number
  /** An answer is slow when it takes more than `latencyFactor × baseline + latencyToleranceMs`. */
  readonly latencyFactor: number
  readonly latencyToleranceMs: number
  /** How far each fast answer pulls the baseline towards its own latency when it is above it (0 … 1). */
  readonly baselineDrift: number
}

/** The defaults of AimdOptions but for `max`. */
export const AIMD_DEFAULTS = Object.freeze({
  min: 1,
  decreaseFactor: 0.5,
  latencyFactor: 2,
  latencyToleranceMs: 50,
  baselineDrift: 0.02
})

/** What the limiter knows between answers. */
export interface AimdState {
  /** Fractional: the sink gets `Math.floor(limit)` requests in flight. */
  readonly limit: number
  /**
   * The sink's usual latency per event (ms; per request when each carries one event): the lowest seen, drifting up
   * slowly; undefined before the first answer.
   */
  readonly baselineMs: number | undefined
  /** When the limit last went down; answers to requests sent before then do not lower it again. */
  readonly decreasedAt: number
}

/** How one request went, as the limiter judges it. */
export type AimdAnswer =
  /** A 2xx. */
  | 'ok'
  /** 429, 503, any Retry-After, no answer (a network error or a timeout): the sink asks for less. */
  | 'overload'
  /** Anything else (a 400, a 500): says nothing about load but for its latency. */
  | 'other'

/** One request's end, fed to the limiter. */
export interface AimdSample {
  /** When the request was sent (a monotonic clock, ms) … */
  readonly sentAt: number
  /** … and how long it took. */
  readonly durationMs: number
  readonly answer: AimdAnswer
  /** Requests in flight to this sink as it ended, itself included. */
  readonly inFlight: number
  /**
   * Events the request carried (a batch's size; 1 when absent). A batch of 100 takes longer than one of 3 at the
   * same speed per event: the baseline is per event and the slow threshold grows with the batch, so a burst of full
   * batches after a lull of small ones is not taken for a slow sink.
   */
  readonly events?: number
}

/** The state before any answer: the limit starts at the ceiling, so a healthy sink is never held back. */
export function initialAimd(options: AimdOptions): AimdState {
  return { limit: options.max, baselineMs: undefined, decreasedAt: Number.NEGATIVE_INFINITY }
}

/** Requests in flight the state allows. */
export function aimdConcurrency(state: AimdState, options: AimdOptions): number {
  return Math.max(options.min, Math.min(options.max, Math.floor(state.limit)))
}

/** Whether an answer of `events` events that took `durationMs` is slow against the baseline (per event). */
export function isSlow(durationMs: number, baselineMs: number | undefined, options: AimdOptions, events = 1): boolean {
  return (
    baselineMs !== undefined && durationMs > baselineMs * events * options.latencyFactor + options.latencyToleranceMs
  )
}

/** The state after `sample`. */
export function nextAimd(state: AimdState, sample: AimdSample, options: AimdOptions): AimdState {
  const events = Math.max(1, sample.events ?? 1)
  const overloaded = sample.answer === 'overload' || isSlow(sample.durationMs, state.baselineMs, options, events)
  const baselineMs =
    sample.answer === 'ok' ? nextBaseline(state.baselineMs, sample.durationMs / events, options) : state.baselineMs
  const limit = Math.max(options.min, Math.min(options.max, state.limit))
  if (overloaded) {
    // One decrease per round trip: the requests already in flight when it went down saw the old load.
    if (sample.sentAt < state.decreasedAt) return { limit, baselineMs, decreasedAt: state.decreasedAt }
    const lowered = Math.max(options.min, Math.floor(limit * options.decreaseFactor))
    return { limit: lowered, baselineMs, decreasedAt: sample.sentAt + sample.durationMs }
  }
  // Raise only while the limit is in use: an idle sink's limit says nothing about what it can take.
  if (sample.answer === 'ok' && sample.inFlight * 2 >= Math.floor(limit)) {
    return { limit: Math.min(options.max, limit + 1 / limit), baselineMs, decreasedAt: state.decreasedAt }
  }
  return { limit, baselineMs, decreasedAt: state.decreasedAt }
}

function nextBaseline(baselineMs: number | undefined, durationMs: number, options: AimdOptions): number {
  if (baselineMs === undefined || durationMs < baselineMs) return durationMs
  // Drifts up, so a sink that is slower for good becomes the new normal and its limit can grow again.
  return baselineMs + (durationMs - baselineMs) * options.baselineDrift
}
