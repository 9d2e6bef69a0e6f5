import { pause } from './abort-fanout.ts'
import { MAX_TIMER_MS, backoffDelay } from './backoff.ts'
import type { CloudEvent } from './cloud-event.ts'
import { deadLetterEvent } from './dead-letter.ts'
import { isBatch } from './event-batch.ts'
import type { EventBatch } from './event-batch.ts'
import type { DeliveryFailure } from './dead-letter.ts'
import { ERROR_DATA_LIMIT } from './dead-letter.ts'
import type { DeliveryObserver, Endpoint } from './delivery-observer.ts'
import type { DeliveryOutcome } from './delivery-outcome.ts'
import type { DeliveryTarget, SinkEndpoint } from './delivery-policy.ts'
import { classifyStatus } from './retriable.ts'
import { honoursRetryAfter, parseRetryAfter, retryWait } from './retry-after.ts'
import type { AttemptResult, OidcTokenLookup, OriginFigures } from './sink-client.ts'
import { SinkClient } from './sink-client.ts'
import { SinkGate } from './sink-gate.ts'
import type { SinkFlowState } from './sink-gate.ts'
import type { SinkPolicy } from './sink-policy.ts'

// Delivery under a source's delivery spec: attempts, backoff, Retry-After, the dead letter sink, the drop policy.
// Every wait is a timer bound to the caller's AbortSignal, so shutdown cancels pending backoffs at once.

export interface DelivererOptions {
  /** Concurrent requests (and so connections) per sink origin, over all sources. Default 128. */
  readonly maxConnectionsPerOrigin?: number
  /**
   * TCP + TLS connect timeout, and how long an attempt keeps trying to get a connection (a sink restarting)
   * before it counts as failed. Default 10 s.
   */
  readonly connectTimeoutMs?: number
  /** How long an idle keep-alive connection is kept. Default 4 s (undici's). */
  readonly keepAliveTimeoutMs?: number
  /** Attempts at the dead letter sink before the event is dropped. Default: unlimited. */
  readonly maxDeadLetterAttempts?: number
  /** Cap on the wait between dead letter sink attempts. Default 30 s. */
  readonly deadLetterMaxBackoffMs?: number
  readonly observer?: DeliveryObserver
  /** The clock Retry-After dates are read against. Default Date.now. */
  readonly now?: () => number
  /** Multi-tenant mode: sinks at forbidden addresses are refused when connecting (see docs/security.md). */
  readonly sinkPolicy?: SinkPolicy
  /** The tokens of sinks' OIDC audiences (docs/kubernetes.md, "OIDC to sinks"). */
  readonly oidcTokens?: OidcTokenLookup
}

/** The defaults of DelivererOptions. */
export const DELIVERER_DEFAULTS = Object.freeze({
  maxConnectionsPerOrigin: 128,
  connectTimeoutMs: 10_000,
  keepAliveTimeoutMs: 4_000,
  maxDeadLetterAttempts: Number.POSITIVE_INFINITY,
  deadLetterMaxBackoffMs: 30_000
})

/** How long a flow control gate is kept with nothing in flight or waiting. */
export const GATE_IDLE_MS = 10 * 60_000

/** The shortest wait between dead letter sink attempts, so a PT0S backoffDelay never spins. */
export const DEAD_LETTER_MIN_BACKOFF_MS = 100

/** Delivers CloudEvents to sinks; one per dispatcher process, shared by all its sources. */
export class Deliverer {
  readonly #client: SinkClient
  readonly #observer: DeliveryObserver
  readonly #now: () => number
  readonly #maxDeadLetterAttempts: number
  readonly #deadLetterMaxBackoffMs: number
  readonly #maxConnectionsPerOrigin: number
  // Flow control gates by source and sink origin, and by target (a target's gate is looked up once).
  readonly #gates = new Map<string, SinkGate>()
  readonly #gateOf = new WeakMap<DeliveryTarget, SinkGate>()

  constructor(options: DelivererOptions = {}) {
    const maxConnectionsPerOrigin = options.maxConnectionsPerOrigin ?? DELIVERER_DEFAULTS.maxConnectionsPerOrigin
    if (!Number.isSafeInteger(maxConnectionsPerOrigin) || maxConnectionsPerOrigin < 1) {
      throw new RangeError(`maxConnectionsPerOrigin ${maxConnectionsPerOrigin} is not a positive integer`)
    }
    const maxDeadLetterAttempts = options.maxDeadLetterAttempts ?? DELIVERER_DEFAULTS.maxDeadLetterAttempts
    if (!(maxDeadLetterAttempts >= 1)) throw new RangeError(`maxDeadLetterAttempts ${maxDeadLetterAttempts} is below 1`)
    this.#client = new SinkClient({
      maxConnectionsPerOrigin,
      connectTimeoutMs: options.connectTimeoutMs ?? DELIVERER_DEFAULTS.connectTimeoutMs,
      keepAliveTimeoutMs: options.keepAliveTimeoutMs ?? DELIVERER_DEFAULTS.keepAliveTimeoutMs,
      errorDataLimit: ERROR_DATA_LIMIT,
      ...(options.sinkPolicy === undefined ? {} : { sinkPolicy: options.sinkPolicy }),
      ...(options.oidcTokens === undefined ? {} : { oidcTokens: options.oidcTokens })
    })
    this.#observer = options.observer ?? {}
    this.#now = options.now ?? Date.now
    this.#maxDeadLetterAttempts = maxDeadLetterAttempts
    this.#deadLetterMaxBackoffMs = options.deadLetterMaxBackoffMs ?? DELIVERER_DEFAULTS.deadLetterMaxBackoffMs
    this.#maxConnectionsPerOrigin = maxConnectionsPerOrigin
  }

  /** The flow control of every source that asked for it, by sink origin: limit, in flight, queued, latency. */
  flow(): SinkFlowState[] {
    this.#forgetIdleGates()
    return [...this.#gates.values()].map(gate => gate.state)
  }

  /**
   * Forgets the flow control gates of a source that stopped here (deleted, moved away, or restarted with other
   * settings), unless one still has requests in it: its limits and figures belong to what ran, not to what comes
   * next under the same name (which starts fresh gates, if it asks for any).
   */
  forgetSource(sourceKey: string): void {
    for (const [key, gate] of this.#gates) {
      if (gate.sourceKey === sourceKey && gate.idleSince !== undefined) this.#gates.delete(key)
    }
  }

  /** Every sink origin's connections and requests: the oldest in flight, requests sent again, the window. */
  sinks(): OriginFigures[] {
    return this.#client.origins()
  }

  /** Connection slots in use and requests waiting for one, over every origin. */
  get load(): { readonly origins: number; readonly inFlight: number; readonly queued: number } {
    return this.#client.load
  }

  /**
   * Delivers `event` to the target's sink under its policy. Never rejects: the outcome says what happened, and
   * `aborted` means the caller stopped it first (the event must be delivered again later). `signal` stops it
   * from sending anything more — waiting for a connection slot or a retry ends at once — while a request on
   * the wire may still be answered (and that answer counts); `wireSignal` (by default `signal`) cuts that
   * request short too. `fetchedAt` (`performance.now()` when the record was fetched) makes the first attempt
   * report its dispatch delay (AttemptInfo.dispatchDelayMs). An EventBatch goes as one batched-mode request,
   * retried and dead-lettered as a whole (each of its events with the error extensions).
   */
  deliver(
    event: CloudEvent | EventBatch,
    target: DeliveryTarget,
    signal?: AbortSignal,
    wireSignal: AbortSignal | undefined = signal,
    fetchedAt?: number
  ): Promise<DeliveryOutcome> {
    const started = performance.now()
    const events = isBatch(event) ? event.events.length : 1
    const stop: Stop = { signal, wireSignal }
    // The first attempt is one promise reaction, not a chain of async frames: most deliveries end with it, and
    // one held by a slow sink costs little more than its request.
    const gate = this.#gateFor(target)
    const sent =
      gate === undefined
        ? this.#send(target.sourceKey, target.sink, event, target.policy.timeoutMs, stop)
        : this.#gated(gate, target, event, stop)
    return sent.then(
      sentResult => {
        const result = this.#reported(target.sourceKey, 'sink', 1, stop, sentResult, fetchedAt)
        if (result?.kind === 'response' && classifyStatus(result.status) === 'delivered') {
          return this.#ended(target, { kind: 'delivered', status: result.status, attempts: 1 }, started, events)
        }
        return this.#deliver(event, target, stop, result).then(outcome => this.#ended(target, outcome, started, events))
      },
      () => this.#ended(target, { kind: 'aborted', attempts: 0, deadLetterAttempts: 0 }, started, events)
    )
  }

  /**
   * Sends `event` straight to the dead letter sink, for a record that cannot be delivered at all (a poison
   * record); `reason` goes into `knativeerrordata`. Without a dead letter sink the event is dropped.
   */
  async deadLetter(
    event: CloudEvent,
    target: DeliveryTarget,
    reason: string,
    signal?: AbortSignal,
    wireSignal: AbortSignal | undefined = signal
  ): Promise<DeliveryOutcome> {
    const started = performance.now()
    const failure: DeliveryFailure = { destination: target.sink.uri, data: Buffer.from(reason) }
    const outcome = await this.#toDeadLetter(event, target, failure, reason, 0, { signal, wireSignal })
    return this.#ended(target, outcome, started)
  }

  /** Closes every connection; deliveries in flight end as network errors. */
  async close(): Promise<void> {
    await this.#client.close()
  }

  // The rest of a delivery whose first attempt did not deliver (`first`; undefined: it was stopped).
  async #deliver(
    event: CloudEvent | EventBatch,
    target: DeliveryTarget,
    stop: Stop,
    first: AttemptResult | undefined
  ): Promise<DeliveryOutcome> {
    const { policy, sourceKey } = target
    let result = first
    let attempts = 0
    for (;;) {
      if (result === undefined) return { kind: 'aborted', attempts, deadLetterAttempts: 0 }
      attempts++
      if (result.kind === 'response') {
        const verdict = classifyStatus(result.status)
        if (verdict === 'delivered') return { kind: 'delivered', status: result.status, attempts }
        if (verdict === 'fail') {
          const reason = `sink answered ${result.status}`
          return this.#toDeadLetter(event, target, failureOf(target, result), reason, attempts, stop)
        }
      }
      if (attempts > policy.retry) {
        const reason =
          result.kind === 'response'
            ? `sink answered ${result.status} on all ${attempts} attempts`
            : `sink unreachable on all ${attempts} attempts: ${result.error}`
        return this.#toDeadLetter(event, target, failureOf(target, result), reason, attempts, stop)
      }
      const delayMs = this.#wait(target, attempts, result, Number.POSITIVE_INFINITY, 0)
      this.#observer.onRetry?.({ sourceKey, endpoint: 'sink', retry: attempts, delayMs })
      if (!(await pause(delayMs, stop.signal))) return { kind: 'aborted', attempts, deadLetterAttempts: 0 }
      result = await this.#attempt(
        sourceKey,
        'sink',
        target.sink,
        event,
        policy.timeoutMs,
        attempts + 1,
        stop,
        this.#gateFor(target)
      )
    }
  }

  async #toDeadLetter(
    event: CloudEvent | EventBatch,
    target: DeliveryTarget,
    failure: DeliveryFailure,
    reason: string,
    attempts: number,
    stop: Stop
  ): Promise<DeliveryOutcome> {
    const sinkStatus = failure.status === undefined ? {} : { sinkStatus: failure.status }
    const dls = target.policy.deadLetterSink
    if (dls === undefined) {
      return {
        kind: 'dropped',
        ...sinkStatus,
        reason: `${reason}; no dead letter sink`,
        attempts,
        deadLetterAttempts: 0
      }
    }
    if (!isBatch(event)) {
      return this.#letter(deadLetterEvent(event, failure), target, dls, reason, attempts, sinkStatus, stop)
    }
    // A batch goes to the dead letter sink one event at a time, in order, in binary mode: a dead letter sink need
    // not speak batched mode (one that refuses it would otherwise hold the batch, and its partition, for good).
    let last: LetterOutcome | undefined
    let deadLetterAttempts = 0
    for (const one of event.events) {
      last = await this.#letter(deadLetterEvent(one, failure), target, dls, reason, attempts, sinkStatus, stop)
      deadLetterAttempts += last.deadLetterAttempts
      // Aborted: the whole batch comes again later (the events before may reach the dead letter sink twice).
      // Dropped: past the dead letter attempt limit, the batch is given up as one.
      if (last.kind !== 'dead-lettered') break
    }
    return last === undefined ? { kind: 'aborted', attempts, deadLetterAttempts } : { ...last, deadLetterAttempts }
  }

  // One event to the dead letter sink, tried until it takes it (or the dead letter attempt limit).
  async #letter(
    letter: CloudEvent,
    target: DeliveryTarget,
    dls: SinkEndpoint,
    reason: string,
    attempts: number,
    sinkStatus: { sinkStatus?: number },
    stop: Stop
  ): Promise<LetterOutcome> {
    let tries = 0
    for (;;) {
      const result = await this.#attempt(
        target.sourceKey,
        'dead-letter',
        dls,
        letter,
        target.policy.timeoutMs,
        tries + 1,
        stop
      )
      if (result === undefined) return { kind: 'aborted', attempts, deadLetterAttempts: tries }
      tries++
      if (result.kind === 'response' && classifyStatus(result.status) === 'delivered') {
        return {
          kind: 'dead-lettered',
          status: result.status,
          ...sinkStatus,
          reason,
          attempts,
          deadLetterAttempts: tries
        }
      }
      if (tries >= this.#maxDeadLetterAttempts) {
        const why = result.kind === 'response' ? `answered ${result.status}` : `unreachable: ${result.error}`
        return {
          kind: 'dropped',
          ...sinkStatus,
          reason: `${reason}; dead letter sink ${why} on all ${tries} attempts`,
          attempts,
          deadLetterAttempts: tries
        }
      }
      // The dead letter sink is the last stop: every failure is retried, with a floor and a cap on the wait.
      const delayMs = this.#wait(target, tries, result, this.#deadLetterMaxBackoffMs, DEAD_LETTER_MIN_BACKOFF_MS)
      this.#observer.onRetry?.({ sourceKey: target.sourceKey, endpoint: 'dead-letter', retry: tries, delayMs })
      if (!(await pause(delayMs, stop.signal))) return { kind: 'aborted', attempts, deadLetterAttempts: tries }
    }
  }

  // One attempt, reported to the observer; undefined when the caller stopped it before or during the request.
  async #attempt(
    sourceKey: string,
    endpoint: Endpoint,
    sink: SinkEndpoint,
    event: CloudEvent | EventBatch,
    timeoutMs: number,
    attempt: number,
    stop: Stop,
    gate?: SinkGate
  ): Promise<AttemptResult | undefined> {
    let result: AttemptResult
    try {
      result =
        gate === undefined
          ? await this.#send(sourceKey, sink, event, timeoutMs, stop)
          : await this.#gated(gate, { sourceKey, sink, policy: { timeoutMs } }, event, stop)
    } catch {
      return undefined
    }
    return this.#reported(sourceKey, endpoint, attempt, stop, result)
  }

  // Rejects when the caller stopped the delivery before the request had a connection slot.
  #send(
    sourceKey: string,
    sink: SinkEndpoint,
    event: CloudEvent | EventBatch,
    timeoutMs: number,
    stop: Stop
  ): Promise<AttemptResult> {
    if (stop.signal?.aborted === true) return Promise.reject(stop.signal.reason)
    return this.#client.send(sourceKey, sink, event, timeoutMs, stop.signal, stop.wireSignal)
  }

  // A sink attempt under the source's flow control: a gate slot first (held while the request is on the wire,
  // not during a backoff), then the connection slot. The record stays in flight in its member while it waits.
  #gated(
    gate: SinkGate,
    target: {
      readonly sourceKey: string
      readonly sink: SinkEndpoint
      readonly policy: { readonly timeoutMs: number }
    },
    event: CloudEvent | EventBatch,
    stop: Stop
  ): Promise<AttemptResult> {
    return gate.acquire(stop.signal).then(permit =>
      this.#send(target.sourceKey, target.sink, event, target.policy.timeoutMs, stop).then(
        result => {
          // A request the caller cut short says nothing about the sink.
          const cut = result.kind === 'error' && stop.wireSignal?.aborted === true
          gate.release(permit, cut ? undefined : result, isBatch(event) ? event.events.length : 1)
          return result
        },
        (error: unknown) => {
          gate.release(permit, undefined)
          throw error
        }
      )
    )
  }

  #gateFor(target: DeliveryTarget): SinkGate | undefined {
    const flow = target.flow
    if (flow === undefined) return undefined
    const known = this.#gateOf.get(target)
    if (known !== undefined && this.#gates.get(known.key) === known) return known
    const origin = new URL(target.sink.uri).origin
    const key = `${target.sourceKey}\n${origin}`
    let gate = this.#gates.get(key)
    if (gate === undefined) {
      this.#forgetIdleGates()
      gate = new SinkGate(target.sourceKey, origin, flow, this.#maxConnectionsPerOrigin)
      this.#gates.set(key, gate)
    } else gate.configure(flow)
    this.#gateOf.set(target, gate)
    return gate
  }

  // A gate idle for GATE_IDLE_MS is forgotten (a deleted source's too, and its metrics with it); what an
  // adaptive limit learnt is that old by then, and the next request starts a fresh gate at the top.
  #forgetIdleGates(): void {
    const now = performance.now()
    for (const [key, gate] of this.#gates) {
      if (gate.idleSince !== undefined && now - gate.idleSince >= GATE_IDLE_MS) this.#gates.delete(key)
    }
  }

  // The attempt's result as the delivery sees it, reported to the observer; undefined when the caller cut the
  // request short (not a sink failure; an answer that came is one, even after a stop). With `fetchedAt`, the
  // report carries the dispatch delay (fetched → request written), once it was written.
  #reported(
    sourceKey: string,
    endpoint: Endpoint,
    attempt: number,
    stop: Stop,
    result: AttemptResult,
    fetchedAt?: number
  ): AttemptResult | undefined {
    if (result.kind !== 'response' && stop.wireSignal?.aborted === true) return undefined
    this.#observer.onAttempt?.({
      sourceKey,
      endpoint,
      attempt,
      ...(result.kind === 'response'
        ? { status: result.status }
        : { error: result.error, ...(result.notSent ? { notSent: true as const } : {}) }),
      durationMs: result.durationMs,
      ...(fetchedAt === undefined || result.sentAt === undefined
        ? {}
        : { dispatchDelayMs: Math.max(0, result.sentAt - fetchedAt) })
    })
    return result
  }

  #ended(target: DeliveryTarget, outcome: DeliveryOutcome, started: number, events = 1): DeliveryOutcome {
    const latencyMs = performance.now() - started
    this.#observer.onOutcome?.({ sourceKey: target.sourceKey, outcome, latencyMs, events })
    return outcome
  }

  #wait(target: DeliveryTarget, retry: number, result: AttemptResult, maxMs: number, minMs: number): number {
    const { policy } = target
    const backoff = backoffDelay(policy.backoffPolicy, policy.backoffDelayMs, retry)
    const retryAfter =
      result.kind === 'response' && honoursRetryAfter(result.status)
        ? parseRetryAfter(result.retryAfter, this.#now())
        : undefined
    const wait = retryWait(backoff, retryAfter, policy.retryAfterMaxMs)
    return Math.max(minMs, Math.min(wait, maxMs, MAX_TIMER_MS))
  }
}

function failureOf(target: DeliveryTarget, result: AttemptResult): DeliveryFailure {
  if (result.kind === 'response') return { destination: target.sink.uri, status: result.status, data: result.body }
  // Knative puts "dispatch error: …" in knativeerrordata when there was no response.
  return { destination: target.sink.uri, data: Buffer.from(`dispatch error: ${result.error}`) }
}

/** How a dead letter ends: every outcome but delivered to the sink. */
type LetterOutcome = Exclude<DeliveryOutcome, { readonly kind: 'delivered' }>

/** What ends a delivery early: `signal` sends nothing more, `wireSignal` also cuts the request on the wire. */
interface Stop {
  readonly signal: AbortSignal | undefined
  readonly wireSignal: AbortSignal | undefined
}
