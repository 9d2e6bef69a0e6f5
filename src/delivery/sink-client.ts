import { rootCertificates } from 'node:tls'
import { Pool } from 'undici'
import { onAbort } from './abort-fanout.ts'
import { MAX_TIMER_MS } from './backoff.ts'
import type { CloudEvent } from './cloud-event.ts'
import type { SinkEndpoint } from './delivery-policy.ts'
import { FairLimiter } from './fair-limiter.ts'
import { binaryHeaders } from './http-binary.ts'

// One HTTP attempt: POST an event in binary mode. Connections are pooled per sink origin (an undici Pool with
// keep-alive) and capped per origin; requests past the cap wait in per-source queues served round-robin.

/** What one attempt got back. */
export type AttemptResult =
  | {
      readonly kind: 'response'
      readonly status: number
      readonly retryAfter?: string
      /** The start of a non-2xx response body (up to the error data limit); empty for 2xx. */
      readonly body: Buffer
      readonly durationMs: number
    }
  | { readonly kind: 'error'; readonly error: string; readonly durationMs: number }

export interface SinkClientOptions {
  readonly maxConnectionsPerOrigin: number
  readonly connectTimeoutMs: number
  readonly keepAliveTimeoutMs: number
  readonly errorDataLimit: number
}

interface Route {
  readonly pool: Pool
  readonly limiter: FairLimiter
  readonly path: string
}

const EMPTY = Buffer.alloc(0)

/** Sends events to sinks over pooled, capped connections. */
export class SinkClient {
  readonly #options: SinkClientOptions
  readonly #limiters = new Map<string, FairLimiter>()
  readonly #pools = new Map<string, Pool>()
  readonly #routes = new Map<string, Route>()
  #closed = false

  constructor(options: SinkClientOptions) {
    this.#options = options
  }

  /** Connection slots in use and requests queued, over every origin. */
  get load(): { readonly origins: number; readonly inFlight: number; readonly queued: number } {
    let inFlight = 0
    let queued = 0
    for (const limiter of this.#limiters.values()) {
      inFlight += limiter.inUse
      queued += limiter.waiting
    }
    return { origins: this.#limiters.size, inFlight, queued }
  }

  /**
   * POSTs `event` to `endpoint` once. Waits for a connection slot in `sourceKey`'s queue first; `timeoutMs`
   * starts once the request has its slot and covers connecting, sending and the answer. Rejects only when `signal` aborts while waiting for the slot.
   */
  async send(
    sourceKey: string,
    endpoint: SinkEndpoint,
    event: CloudEvent,
    timeoutMs: number,
    signal?: AbortSignal
  ): Promise<AttemptResult> {
    if (this.#closed) throw new Error('SinkClient is closed')
    const route = this.#route(endpoint)
    await route.limiter.acquire(sourceKey, signal)
    const started = performance.now()
    // Each request has its own controller: the attempt's timeout (a precise native timer; undici's own timers
    // tick about once a second) and the caller's signal (through one shared listener) both abort it.
    const controller = new AbortController()
    const timer = setTimeout(() => controller.abort(new AttemptTimeout(timeoutMs)), Math.min(timeoutMs, MAX_TIMER_MS))
    const unsubscribe = signal === undefined ? undefined : onAbort(signal, () => controller.abort(signal.reason))
    try {
      const response = await route.pool.request({
        method: 'POST',
        path: route.path,
        headers: binaryHeaders(event),
        body: event.data,
        headersTimeout: 0,
        bodyTimeout: 0,
        signal: controller.signal
      })
      const status = response.statusCode
      const retryAfter = header(response.headers['retry-after'])
      let body: Buffer = EMPTY
      if (status >= 200 && status < 300) await response.body.dump()
      else body = await readPrefix(response.body, this.#options.errorDataLimit)
      return {
        kind: 'response',
        status,
        ...(retryAfter === undefined ? {} : { retryAfter }),
        body,
        durationMs: performance.now() - started
      }
    } catch (error) {
      const reason = controller.signal.aborted ? controller.signal.reason : error
      return { kind: 'error', error: describe(reason), durationMs: performance.now() - started }
    } finally {
      clearTimeout(timer)
      unsubscribe?.()
      route.limiter.release()
    }
  }

  /** Closes every pool; requests in flight fail. */
  async close(): Promise<void> {
    this.#closed = true
    const pools = [...this.#pools.values()]
    this.#pools.clear()
    this.#routes.clear()
    await Promise.allSettled(pools.map(pool => pool.destroy()))
  }

  #route(endpoint: SinkEndpoint): Route {
    const routeKey = endpoint.caCerts === undefined ? endpoint.uri : `${endpoint.uri}\n${endpoint.caCerts}`
    let route = this.#routes.get(routeKey)
    if (route !== undefined) return route
    const url = new URL(endpoint.uri)
    const origin = url.origin
    let limiter = this.#limiters.get(origin)
    if (limiter === undefined) {
      limiter = new FairLimiter(this.#options.maxConnectionsPerOrigin)
      this.#limiters.set(origin, limiter)
    }
    // One pool per origin and trust set: sources that trust different CAs never share a TLS session.
    const poolKey = endpoint.caCerts === undefined ? origin : `${origin}\n${endpoint.caCerts}`
    let pool = this.#pools.get(poolKey)
    if (pool === undefined) {
      pool = new Pool(origin, {
        connections: this.#options.maxConnectionsPerOrigin,
        pipelining: 1,
        keepAliveTimeout: this.#options.keepAliveTimeoutMs,
        connect: {
          timeout: this.#options.connectTimeoutMs,
          // Node's `ca` replaces the system roots; CACerts adds to them (as Knative's CACerts does).
          ...(endpoint.caCerts === undefined ? {} : { ca: [...rootCertificates, endpoint.caCerts] })
        }
      })
      this.#pools.set(poolKey, pool)
    }
    route = { pool, limiter, path: `${url.pathname}${url.search}` }
    this.#routes.set(routeKey, route)
    return route
  }
}

async function readPrefix(body: AsyncIterable<Buffer>, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of body) {
    chunks.push(chunk)
    size += chunk.length
    // Leaving the loop early destroys the rest of the body (and its connection): only error bodies get here.
    if (size >= limit) break
  }
  return Buffer.concat(chunks, size).subarray(0, limit)
}

function header(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value
}

class AttemptTimeout extends Error {
  constructor(ms: number) {
    super(`no answer within the ${ms} ms timeout`)
    this.name = 'AttemptTimeout'
  }
}

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error)
  const code = (error as { code?: unknown }).code
  const cause = error.cause instanceof Error ? `: ${error.cause.message}` : ''
  return `${typeof code === 'string' ? `${code} ` : ''}${error.message}${cause}`
}
