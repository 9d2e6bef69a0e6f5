import type { FlowControlSpec } from '../api/index.ts'
import { onAbort } from './abort-fanout.ts'
import type { AimdAnswer, AimdOptions, AimdState } from './aimd-limit.ts'
import { AIMD_DEFAULTS, aimdConcurrency, initialAimd, nextAimd } from './aimd-limit.ts'
import type { AttemptResult } from './sink-client.ts'

// One source's flow control towards one sink origin: requests in flight at most its limit (explicit, or adaptive
// under it), sent no closer together than its rate allows; the rest wait here, FIFO. A gate holds only its own
// source's requests, so a slow sink's queue never takes a slot from another sink: its backlog waits in the
// deliveries its member keeps in flight (lag), and the member stops fetching once its window is full.

/** What `/metrics` and `Deliverer.flow()` show of one gate. */
export interface SinkFlowState {
  readonly sourceKey: string
  /** The sink's origin (`http://host:port`). */
  readonly sink: string
  readonly adaptive: boolean
  /** Requests in flight allowed now. */
  readonly limit: number
  readonly inFlight: number
  /** Requests waiting for the limit or the rate. */
  readonly queued: number
  /** Smoothed time to an answer (ms, exponential average over about 20 answers); undefined before one. */
  readonly latencyMs: number | undefined
}

/** A slot taken from a gate: give it back with `SinkGate.release`. */
export interface GatePermit {
  readonly sentAt: number
}

interface Waiter {
  readonly resolve: (permit: GatePermit) => void
  unsubscribe: (() => void) | undefined
}

const LATENCY_WEIGHT = 0.05
/** The longest delay setTimeout holds; a longer one fires after 1 ms. */
const MAX_TIMER_MS = 2 ** 31 - 1

/** Holds one source's requests to one sink origin to its flow control. */
export class SinkGate {
  readonly sourceKey: string
  readonly sink: string
  /** `sourceKey` and `sink`, one line each: the gate's name among a deliverer's. */
  readonly key: string
  readonly #ceiling: number
  readonly #now: () => number
  #flow: FlowControlSpec
  #aimd: AimdOptions
  #state: AimdState
  #inFlight = 0
  #latencyMs: number | undefined
  // Insertion order is FIFO; aborted waiters leave from anywhere.
  readonly #waiters = new Set<Waiter>()
  // The earliest the next request may go under the rate (one every 1/rate seconds, no burst).
  #nextSendAt = Number.NEGATIVE_INFINITY
  #timer: NodeJS.Timeout | undefined

  /** `ceiling`: the connection cap per origin, above which a limit means nothing. */
  constructor(
    sourceKey: string,
    sink: string,
    flow: FlowControlSpec,
    ceiling: number,
    now = performance.now.bind(performance)
  ) {
    this.sourceKey = sourceKey
    this.sink = sink
    this.key = `${sourceKey}\n${sink}`
    this.#ceiling = ceiling
    this.#now = now
    this.#flow = flow
    this.#aimd = aimdOptions(flow, ceiling)
    this.#state = initialAimd(this.#aimd)
  }

  /** Takes a changed spec; the adaptive limit keeps what it learnt, within the new bounds. */
  configure(flow: FlowControlSpec): void {
    const old = this.#flow
    if (old.maxConcurrency === flow.maxConcurrency && old.maxRate === flow.maxRate && old.adaptive === flow.adaptive) {
      return
    }
    this.#flow = flow
    this.#aimd = aimdOptions(flow, this.#ceiling)
    this.#state = flow.adaptive && old.adaptive ? this.#state : initialAimd(this.#aimd)
    this.#pump()
  }

  /** Idle (nothing in flight or waiting) since `now()` at that time; undefined while in use. */
  idleSince: number | undefined

  /** Requests in flight allowed now. */
  get limit(): number {
    if (this.#flow.adaptive) return aimdConcurrency(this.#state, this.#aimd)
    return Math.min(this.#flow.maxConcurrency ?? this.#ceiling, this.#ceiling)
  }

  get state(): SinkFlowState {
    return {
      sourceKey: this.sourceKey,
      sink: this.sink,
      adaptive: this.#flow.adaptive,
      limit: this.limit,
      inFlight: this.#inFlight,
      queued: this.#waiters.size,
      latencyMs: this.#latencyMs
    }
  }

  /** A slot: at once when the limit and the rate allow and nobody waits, else in turn. Rejects when `signal` aborts. */
  acquire(signal?: AbortSignal): Promise<GatePermit> {
    if (signal?.aborted === true) return Promise.reject(signal.reason)
    this.idleSince = undefined
    if (this.#waiters.size === 0 && this.#ready()) return Promise.resolve(this.#take())
    return new Promise<GatePermit>((resolve, reject) => {
      const waiter: Waiter = { resolve, unsubscribe: undefined }
      if (signal !== undefined) {
        waiter.unsubscribe = onAbort(signal, () => {
          this.#waiters.delete(waiter)
          if (this.#inFlight === 0 && this.#waiters.size === 0) this.idleSince = this.#now()
          reject(signal.reason)
        })
      }
      this.#waiters.add(waiter)
      this.#pump()
    })
  }

  /**
   * Gives a slot back with how its request went (undefined: the caller cut it short; it says nothing), and how many
   * events it carried (a batch's size).
   */
  release(permit: GatePermit, result: AttemptResult | undefined, events = 1): void {
    if (result !== undefined) {
      this.#latencyMs =
        this.#latencyMs === undefined
          ? result.durationMs
          : this.#latencyMs + (result.durationMs - this.#latencyMs) * LATENCY_WEIGHT
      if (this.#flow.adaptive) {
        const sample = {
          sentAt: permit.sentAt,
          durationMs: result.durationMs,
          answer: answerOf(result),
          inFlight: this.#inFlight,
          events
        }
        this.#state = nextAimd(this.#state, sample, this.#aimd)
      }
    }
    this.#inFlight--
    this.#pump()
    if (this.#inFlight === 0 && this.#waiters.size === 0) this.idleSince = this.#now()
  }

  #ready(): boolean {
    return this.#inFlight < this.limit && this.#now() >= this.#nextSendAt
  }

  #take(): GatePermit {
    const now = this.#now()
    this.#inFlight++
    const rate = this.#flow.maxRate
    if (rate !== undefined) this.#nextSendAt = Math.max(now, this.#nextSendAt) + 1000 / rate
    return { sentAt: now }
  }

  // Hands slots to waiters in order while the limit and the rate allow; waits for the rate with one timer.
  #pump(): void {
    while (this.#waiters.size > 0 && this.#inFlight < this.limit) {
      const now = this.#now()
      if (now < this.#nextSendAt) {
        if (this.#timer === undefined) {
          this.#timer = setTimeout(
            () => {
              this.#timer = undefined
              this.#pump()
            },
            // At most what a timer holds (about 24.8 days); the pump sets it again if the time has not come.
            Math.min(Math.ceil(this.#nextSendAt - now), MAX_TIMER_MS)
          )
          // The waiting deliveries keep their callers busy; the timer alone must not keep a process alive.
          this.#timer.unref()
        }
        return
      }
      const waiter = this.#waiters.values().next().value as Waiter
      this.#waiters.delete(waiter)
      waiter.unsubscribe?.()
      waiter.resolve(this.#take())
    }
  }
}

function aimdOptions(flow: FlowControlSpec, ceiling: number): AimdOptions {
  return { ...AIMD_DEFAULTS, max: Math.min(flow.maxConcurrency ?? ceiling, ceiling) }
}

/** How the limiter reads an attempt: 429, 503 and Retry-After ask for less, and so does no answer at all. */
export function answerOf(result: AttemptResult): AimdAnswer {
  if (result.kind === 'error') return 'overload'
  if (result.status === 429 || result.status === 503 || result.retryAfter !== undefined) return 'overload'
  return result.status >= 200 && result.status < 300 ? 'ok' : 'other'
}
