import { rootCertificates } from 'node:tls'
import type { Dispatcher } from 'undici'
import { Pool, buildConnector } from 'undici'
import type { IncomingHttpHeaders } from 'node:http'
import { subscribe, unsubscribe } from './abort-fanout.ts'
import type { AbortSubscriber } from './abort-fanout.ts'
import { DeadlineList } from './deadline-list.ts'
import type { Deadline } from './deadline-list.ts'
import type { CloudEvent } from './cloud-event.ts'
import type { OidcTokenRef, SinkEndpoint } from './delivery-policy.ts'
import { FairLimiter } from './fair-limiter.ts'
import { CONNECT_WINDOW_DEFAULTS } from './connect-window.ts'
import { PacedConnector } from './paced-connector.ts'
import type { OriginConnectionFigures, PacedConnectorOptions } from './paced-connector.ts'
import type { SinkPolicy } from './sink-policy.ts'
import { binaryHeaders } from './http-binary.ts'
import { BATCH_HEADERS, isBatch } from './event-batch.ts'
import type { EventBatch } from './event-batch.ts'
import { ErrorCodes, ShoalError } from '../errors/index.ts'

// One HTTP attempt: POST an event in binary mode (or a batch in batched mode). Connections are pooled per sink
// origin (an undici Pool with keep-alive) and capped per origin; requests past the cap wait in per-source queues
// served round-robin. New connections are opened in a window and watched until the sink shows it accepted them
// (paced-connector.ts); a request that never left Shoal — no connection could be had, or the one it was written
// into was never accepted — is sent again within the same attempt: it is not the sink's failure, so it uses up
// no retry (docs/delivery.md, "Connections").

/** What one attempt got back. */
export type AttemptResult =
  | {
      readonly kind: 'response'
      readonly status: number
      readonly retryAfter?: string
      /** The start of a non-2xx response body (up to the error data limit); empty for 2xx. */
      readonly body: Buffer
      readonly durationMs: number
      /** When the request was handed to its socket (`performance.now()`); absent if it never was. */
      readonly sentAt?: number
    }
  | {
      readonly kind: 'error'
      readonly error: string
      readonly durationMs: number
      readonly sentAt?: number
      /** Nothing was sent, and why is Shoal's (no OIDC token yet), not the sink's. */
      readonly notSent?: true
    }

export interface SinkClientOptions {
  readonly maxConnectionsPerOrigin: number
  readonly connectTimeoutMs: number
  readonly keepAliveTimeoutMs: number
  readonly errorDataLimit: number
  /** Refuses forbidden sink addresses when connecting (multi-tenant mode); absent: every address is allowed. */
  readonly sinkPolicy?: SinkPolicy
  /** How new connections are paced and watched (tests shorten the times). */
  readonly connections?: PacedConnectorOptions
  /** The current token for an endpoint's OIDC audience; absent: endpoints with one get no request sent. */
  readonly oidcTokens?: OidcTokenLookup
}

/** The token for a sink's OIDC audience, or why there is none (yet). */
export type OidcTokenLookup = (
  ref: OidcTokenRef
) => { readonly kind: 'token'; readonly token: string } | { readonly kind: 'missing'; readonly reason: string }

/** What one sink origin's connections and requests look like now. */
export interface OriginFigures extends OriginConnectionFigures {
  readonly origin: string
  /** Requests holding a connection slot (connecting, on the wire or waiting for the answer). */
  readonly inFlight: number
  /** Requests waiting for a connection slot. */
  readonly queued: number
  /** How long the oldest request in flight has been, in ms (0: none). */
  readonly oldestInFlightMs: number
  /** Requests sent again because the sink never read them or no connection could be had, since the start. */
  readonly resent: number
}

/** One sink origin: its connection cap and queues, its connection window, the requests in flight to it. */
class Origin {
  readonly name: string
  readonly limiter: FairLimiter
  readonly connector: PacedConnector
  /** In start order: the first is the oldest. */
  readonly inFlight = new Set<Attempt>()
  resent = 0

  constructor(name: string, capacity: number, connections: PacedConnectorOptions | undefined) {
    this.name = name
    const limiter = new FairLimiter(capacity)
    this.limiter = limiter
    // Requests go to the pools only as fast as connections can carry them: the rest wait here, fairly, and take
    // whichever connection frees first (see PacedConnector.usable).
    this.connector = new PacedConnector(
      {
        window: {
          ...CONNECT_WINDOW_DEFAULTS,
          initial: Math.min(CONNECT_WINDOW_DEFAULTS.initial, capacity),
          max: capacity
        },
        ...connections
      },
      usable => limiter.setLimit(usable)
    )
    limiter.setLimit(this.connector.usable)
  }

  get figures(): OriginFigures {
    const oldest = this.inFlight.values().next().value
    return {
      origin: this.name,
      ...this.connector.figures,
      inFlight: this.limiter.inUse,
      queued: this.limiter.waiting,
      oldestInFlightMs: oldest === undefined ? 0 : Math.round(performance.now() - oldest.started),
      resent: this.resent
    }
  }
}

interface Route {
  readonly pool: Pool
  readonly origin: Origin
  readonly path: string
}

const EMPTY = Buffer.alloc(0)

/** An event's headers with the endpoint's own (they never replace the event's). */
function withEndpointHeaders(
  headers: Readonly<Record<string, string>>,
  extra: Readonly<Record<string, string>> | undefined
): Record<string, string> {
  return extra === undefined ? headers : { ...extra, ...headers }
}

/** Sends events to sinks over pooled, capped connections. */
export class SinkClient {
  readonly #options: SinkClientOptions
  readonly #origins = new Map<string, Origin>()
  readonly #pools = new Map<string, Pool>()
  readonly #routes = new Map<string, Route>()
  /** One timer per timeout value for every attempt under it (see DeadlineList). */
  readonly #deadlines = new Map<number, DeadlineList>()
  #closed = false

  constructor(options: SinkClientOptions) {
    this.#options = options
  }

  /** Connection slots in use and requests queued, over every origin. */
  get load(): { readonly origins: number; readonly inFlight: number; readonly queued: number } {
    let inFlight = 0
    let queued = 0
    for (const { limiter } of this.#origins.values()) {
      inFlight += limiter.inUse
      queued += limiter.waiting
    }
    return { origins: this.#origins.size, inFlight, queued }
  }

  /** Every sink origin's connections and requests. */
  origins(): OriginFigures[] {
    return [...this.#origins.values()].map(origin => origin.figures)
  }

  /**
   * POSTs `event` to `endpoint` once. Waits for a connection slot in `sourceKey`'s queue first; `timeoutMs`
   * starts once the request has its slot and covers connecting, sending and the answer. Rejects only when `signal`
   * aborts while waiting for the slot; `wireSignal` (by default `signal`) aborts the request once it is sent.
   */
  send(
    sourceKey: string,
    endpoint: SinkEndpoint,
    event: CloudEvent | EventBatch,
    timeoutMs: number,
    signal?: AbortSignal,
    wireSignal: AbortSignal | undefined = signal
  ): Promise<AttemptResult> {
    let route: Route
    try {
      if (this.#closed) throw new Error('SinkClient is closed')
      if (signal?.aborted === true) throw signal.reason
      route = this.#route(endpoint)
    } catch (error) {
      return Promise.reject(error)
    }
    let headers = endpoint.headers
    if (endpoint.oidc !== undefined) {
      const found = this.#options.oidcTokens?.(endpoint.oidc) ?? {
        kind: 'missing',
        reason: 'this dispatcher reads no OIDC tokens'
      }
      // Not sent: a request without the token the sink expects would only be refused.
      if (found.kind === 'missing') {
        const error = `no OIDC token for audience ${JSON.stringify(endpoint.oidc.audience)}: ${found.reason}`
        return Promise.resolve({ kind: 'error', error, durationMs: 0, notSent: true })
      }
      headers = { ...headers, authorization: `Bearer ${found.token}` }
    }
    // A free slot sends at once: while the request is held, its Attempt is all there is (no suspended frame).
    const { limiter } = route.origin
    if (limiter.tryAcquire()) return this.#dispatch(route, headers, event, timeoutMs, wireSignal)
    return limiter.acquire(sourceKey, signal).then(() => {
      // Handed a slot as the signal aborted (by a request it aborted): it goes to the next one.
      if (signal?.aborted === true) {
        limiter.release()
        throw signal.reason
      }
      return this.#dispatch(route, headers, event, timeoutMs, wireSignal)
    })
  }

  /** Closes every pool; requests in flight fail. */
  async close(): Promise<void> {
    this.#closed = true
    const pools = [...this.#pools.values()]
    this.#pools.clear()
    this.#routes.clear()
    for (const origin of this.#origins.values()) origin.connector.close()
    await Promise.allSettled(pools.map(pool => pool.destroy()))
  }

  // undici's dispatch() with a handler of our own: no response stream and no promise per request. The Attempt
  // holds the connection slot and gives it back when it settles.
  #dispatch(
    route: Route,
    endpointHeaders: Readonly<Record<string, string>> | undefined,
    event: CloudEvent | EventBatch,
    timeoutMs: number,
    wireSignal: AbortSignal | undefined
  ): Promise<AttemptResult> {
    let deadlines = this.#deadlines.get(timeoutMs)
    if (deadlines === undefined) {
      deadlines = new DeadlineList(timeoutMs)
      this.#deadlines.set(timeoutMs, deadlines)
    }
    const request: Dispatcher.DispatchOptions = {
      method: 'POST',
      path: route.path,
      headers: withEndpointHeaders(isBatch(event) ? BATCH_HEADERS : binaryHeaders(event), endpointHeaders),
      body: isBatch(event) ? event.body : event.data,
      headersTimeout: 0,
      bodyTimeout: 0
    }
    const attempt = new Attempt(
      route,
      request,
      this.#options.errorDataLimit,
      deadlines,
      timeoutMs,
      this.#options.connectTimeoutMs,
      wireSignal
    )
    attempt.start()
    return attempt.result
  }

  #route(endpoint: SinkEndpoint): Route {
    const routeKey = endpoint.caCerts === undefined ? endpoint.uri : `${endpoint.uri}\n${endpoint.caCerts}`
    let route = this.#routes.get(routeKey)
    if (route !== undefined) return route
    const url = new URL(endpoint.uri)
    const origin = url.origin
    let state = this.#origins.get(origin)
    if (state === undefined) {
      state = new Origin(origin, this.#options.maxConnectionsPerOrigin, this.#options.connections)
      this.#origins.set(origin, state)
    }
    // One pool per origin and trust set: sources that trust different CAs never share a TLS session.
    const poolKey = endpoint.caCerts === undefined ? origin : `${origin}\n${endpoint.caCerts}`
    let pool = this.#pools.get(poolKey)
    if (pool === undefined) {
      const connect = {
        timeout: this.#options.connectTimeoutMs,
        // Node's `ca` replaces the system roots; CACerts adds to them (as Knative's CACerts does).
        ...(endpoint.caCerts === undefined ? {} : { ca: [...rootCertificates, endpoint.caCerts] })
      }
      const policy = this.#options.sinkPolicy
      pool = new Pool(origin, {
        connections: this.#options.maxConnectionsPerOrigin,
        pipelining: 1,
        keepAliveTimeout: this.#options.keepAliveTimeoutMs,
        connect: state.connector.wrap(
          policy === undefined ? buildConnector(connect) : policy.connectorFor(origin, connect)
        )
      })
      this.#pools.set(poolKey, pool)
    }
    route = { pool, origin: state, path: `${url.pathname}${url.search}` }
    this.#routes.set(routeKey, route)
    return route
  }
}

/**
 * One request's undici handler: the status, Retry-After and the start of a non-2xx body (up to `limit` bytes;
 * past it the rest of the body and its connection are destroyed), settled once as an AttemptResult. It is also
 * its own entry in its timeout's deadline list (a precise native timer: undici's own timers tick about once a
 * second) and its own listener on the caller's signal, and it gives its connection slot back when it settles.
 * A request that never left Shoal (see `neverLeft`) is dispatched again, within the same deadline.
 */
class Attempt implements Dispatcher.DispatchHandler, AbortSubscriber, Deadline {
  readonly result: Promise<AttemptResult>
  deadlineAt = 0
  prevDeadline: Deadline | undefined
  nextDeadline: Deadline | undefined
  readonly started = performance.now()
  readonly #route: Route
  readonly #request: Dispatcher.DispatchOptions
  readonly #limit: number
  readonly #deadlines: DeadlineList
  readonly #timeoutMs: number
  readonly #connectBudgetMs: number
  readonly #wireSignal: AbortSignal | undefined
  #resolve!: (result: AttemptResult) => void
  /** When a connect first failed for this attempt (-1: none did): connects are tried again for the budget. */
  #noConnectionSince = -1
  /** Times a connection was cut under this request before any answer and it went again. */
  #cutResent = 0
  #controller: Dispatcher.DispatchController | undefined
  #reason: unknown
  #settled = false
  /** This dispatch's request was handed to a socket (onRequestStart came). */
  #written = false
  #status = 0
  #retryAfter: string | undefined
  #chunks: Buffer[] | undefined
  #size = 0
  #sentAt = -1

  constructor(
    route: Route,
    request: Dispatcher.DispatchOptions,
    limit: number,
    deadlines: DeadlineList,
    timeoutMs: number,
    connectBudgetMs: number,
    wireSignal: AbortSignal | undefined
  ) {
    this.#route = route
    this.#connectBudgetMs = connectBudgetMs
    this.#request = request
    this.#limit = limit
    this.#deadlines = deadlines
    this.#timeoutMs = timeoutMs
    this.#wireSignal = wireSignal
    this.result = new Promise(resolve => (this.#resolve = resolve))
    deadlines.add(this)
    route.origin.inFlight.add(this)
    if (wireSignal === undefined) return
    if (wireSignal.aborted) this.abort(wireSignal.reason)
    else subscribe(wireSignal, this)
  }

  /** Hands the request to the origin's pool (again, after one that never left). */
  start(): void {
    if (this.#settled) return
    this.#controller = undefined
    this.#written = false
    try {
      this.#route.pool.dispatch(this.#request, this)
    } catch (error) {
      this.failed(error)
    }
  }

  signalAborted(): void {
    this.abort(this.#wireSignal?.reason)
  }

  expire(): void {
    this.abort(
      new ShoalError(ErrorCodes.SINK_TIMEOUT, `no answer within the ${this.#timeoutMs} ms timeout`, { retriable: true })
    )
  }

  /**
   * Aborts the request with `reason`; the attempt ends in error. A request not yet written (waiting for its
   * connection) ends at once, and undici drops it when its turn comes.
   */
  abort(reason: unknown): void {
    if (this.#settled || this.#reason !== undefined) return
    this.#reason = reason ?? new Error('aborted')
    if (this.#controller === undefined) this.failed(this.#reason)
    else this.#controller.abort(this.#reason as Error)
  }

  /** Settles as an error: `error`, or the abort reason when the attempt was aborted. */
  failed(error: unknown): void {
    if (this.#settled) return
    const message = describe(this.#reason ?? error)
    const durationMs = performance.now() - this.started
    this.#settle(
      this.#sentAt < 0
        ? { kind: 'error', error: message, durationMs }
        : { kind: 'error', error: message, durationMs, sentAt: this.#sentAt }
    )
  }

  // undici calls this as it writes the request: on a connected socket, with the headers and body written right
  // after in the same tick. That moment is the end of the dispatch delay.
  onRequestStart(controller: Dispatcher.DispatchController): void {
    if (this.#reason !== undefined) {
      controller.abort(this.#reason as Error)
      return
    }
    this.#controller = controller
    this.#written = true
    this.#sentAt = performance.now()
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders): void {
    if (statusCode < 200) return
    this.#status = statusCode
    this.#retryAfter = header(headers['retry-after'])
    if (statusCode >= 300) this.#chunks = []
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    const chunks = this.#chunks
    if (chunks === undefined || this.#settled) return
    chunks.push(chunk)
    this.#size += chunk.length
    // Only error bodies get here: past the limit, the rest of the body (and its connection) is destroyed.
    if (this.#size >= this.#limit) {
      this.#respond()
      controller.abort(new Error('error body past the data limit'))
    }
  }

  onResponseEnd(): void {
    this.#respond()
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    if (!this.#settled && this.#reason === undefined && this.#mayResend(error)) {
      // Not the sink's failure: the same request goes again, on another connection (the connector paces it).
      this.#route.origin.resent++
      setImmediate(() => this.start())
      return
    }
    this.failed(error)
  }

  // A request the sink never read goes again for as long as the attempt lasts; one that found no connection, for
  // the connect budget (a sink restarting is back within it; one that stays away fails the attempt, as Knative's).
  #mayResend(error: Error): boolean {
    const left = neverLeft(error, this.#written, this.#status !== 0)
    if (left === 'no') return false
    if (left === 'not-read') return true
    if (left === 'cut') {
      // A keep-alive connection the sink closed as the request went out: a few times per attempt, so a sink
      // that crashes on a request still fails it.
      if (this.#cutResent >= MAX_CUT_RESENDS) return false
      this.#cutResent++
      return true
    }
    const now = performance.now()
    if (this.#noConnectionSince < 0) this.#noConnectionSince = now
    return now - this.#noConnectionSince < this.#connectBudgetMs
  }

  #respond(): void {
    const chunks = this.#chunks
    const body = chunks === undefined ? EMPTY : Buffer.concat(chunks, this.#size).subarray(0, this.#limit)
    const durationMs = performance.now() - this.started
    const retryAfter = this.#retryAfter
    // A response means the request was written: sentAt is set.
    this.#settle(
      retryAfter === undefined
        ? { kind: 'response', status: this.#status, body, durationMs, sentAt: this.#sentAt }
        : { kind: 'response', status: this.#status, retryAfter, body, durationMs, sentAt: this.#sentAt }
    )
  }

  #settle(result: AttemptResult): void {
    if (this.#settled) return
    this.#settled = true
    this.#deadlines.remove(this)
    this.#route.origin.inFlight.delete(this)
    if (this.#wireSignal !== undefined) unsubscribe(this.#wireSignal, this)
    this.#route.origin.limiter.release()
    this.#resolve(result)
  }
}

// Connect failures that say no connection could be had (nothing listens there yet, its backlog dropped the
// handshake, no route for now); DNS, TLS and sink policy failures are not among them: they are the sink's answer.
const NO_CONNECTION = new Set([
  'UND_ERR_CONNECT_TIMEOUT',
  'ECONNREFUSED',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EADDRNOTAVAIL'
])

/** Sends again of one attempt's request after its connection was cut before any answer. */
const MAX_CUT_RESENDS = 3

// The connection closed under a written request: the sink closed a keep-alive connection (idle, or after its
// N-th request) as the request went out on it.
const CUT = new Set(['ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET'])

/**
 * Whether a failed dispatch never reached the sink: no connection could be had before the request was written
 * ('no-connection'), the connection it was written into was never accepted ('not-read'), or the connection was
 * cut before any answer ('cut': most likely a keep-alive connection the sink had just closed).
 */
function neverLeft(error: Error, written: boolean, answered: boolean): 'not-read' | 'no-connection' | 'cut' | 'no' {
  const code = (error as { code?: unknown }).code
  if (code === ErrorCodes.SINK_NOT_ACCEPTED) return 'not-read'
  if (typeof code !== 'string') return 'no'
  if (!written) return NO_CONNECTION.has(code) ? 'no-connection' : 'no'
  return !answered && CUT.has(code) ? 'cut' : 'no'
}

function header(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value
}

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error)
  const code = (error as { code?: unknown }).code
  const cause = error.cause instanceof Error ? `: ${error.cause.message}` : ''
  return `${typeof code === 'string' ? `${code} ` : ''}${error.message}${cause}`
}
