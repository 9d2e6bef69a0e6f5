import type { KindInfo } from '../api/index.ts'
import { ErrorCodes, ShoalError } from '../errors/index.ts'
import { statusFromResponse } from './api-status.ts'
import type { ApiStatus } from './api-status.ts'
import type { Connection } from './flags.ts'
import { trustingFetch } from './trusting-fetch.ts'

/** What one call returned: a parsed body, or the server's `Status`. Network failures throw instead. */
export type ApiResult =
  | { readonly ok: true; readonly code: number; readonly body: unknown }
  | { readonly ok: false; readonly status: ApiStatus }

/** The Shoal resource API, over HTTP. Every call is bounded by the connection's timeout and the caller's signal. */
export class ApiClient {
  readonly #connection: Connection
  readonly #signal: AbortSignal | undefined

  constructor(connection: Connection, signal?: AbortSignal) {
    this.#connection = connection
    this.#signal = signal
  }

  get server(): string {
    return this.#connection.server
  }

  /** Lists one kind in a namespace, or across all namespaces when `namespace` is undefined. */
  list(info: KindInfo, namespace: string | undefined, labelSelector?: string): Promise<ApiResult> {
    const query =
      labelSelector === undefined || labelSelector === '' ? '' : `?labelSelector=${encodeURIComponent(labelSelector)}`
    return this.#call('GET', `${collectionPath(info, namespace)}${query}`)
  }

  get(info: KindInfo, namespace: string, name: string): Promise<ApiResult> {
    return this.#call('GET', objectPath(info, namespace, name))
  }

  create(info: KindInfo, namespace: string, body: unknown): Promise<ApiResult> {
    return this.#call('POST', collectionPath(info, namespace), body)
  }

  /** PUT; a `metadata.resourceVersion` in the body makes it a compare-and-set. */
  replace(info: KindInfo, namespace: string, name: string, body: unknown): Promise<ApiResult> {
    return this.#call('PUT', objectPath(info, namespace, name), body)
  }

  delete(info: KindInfo, namespace: string, name: string): Promise<ApiResult> {
    return this.#call('DELETE', objectPath(info, namespace, name))
  }

  /** POST of a JSON body to any path on the server (`/shoal/v1/rebalance`). */
  postPath(path: string, body: unknown): Promise<ApiResult> {
    return this.#call('POST', path, body)
  }

  /** GET of any path on the server (`/openapi.json`, `/healthz`). */
  getPath(path: string): Promise<ApiResult> {
    return this.#call('GET', path)
  }

  async #call(method: string, path: string, body?: unknown): Promise<ApiResult> {
    const url = `${this.#connection.server}${path}`
    const signals: AbortSignal[] = []
    if (this.#connection.timeoutMs > 0) signals.push(AbortSignal.timeout(this.#connection.timeoutMs))
    if (this.#signal !== undefined) signals.push(this.#signal)
    const headers: Record<string, string> = { accept: 'application/json' }
    if (body !== undefined) headers['content-type'] = 'application/json'
    if (this.#connection.token !== undefined) headers['authorization'] = `Bearer ${this.#connection.token}`
    try {
      const init = {
        method,
        headers,
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        ...(signals.length === 0 ? {} : { signal: AbortSignal.any(signals) })
      }
      const response =
        this.#connection.caFile === undefined
          ? await fetch(url, init)
          : await trustingFetch(url, init, this.#connection.caFile)
      const raw = await response.text()
      const parsed = parseJson(raw)
      if (response.ok) {
        if (parsed === undefined && raw.trim() !== '') {
          throw new ShoalError(
            ErrorCodes.API,
            `the Shoal API at ${this.server} answered ${method} ${path} with a body that is not JSON`
          )
        }
        return { ok: true, code: response.status, body: parsed }
      }
      return { ok: false, status: statusFromResponse(response.status, response.statusText, parsed, raw) }
    } catch (error) {
      throw this.#networkError(error)
    }
  }

  #networkError(error: unknown): ShoalError {
    if (error instanceof ShoalError) return error
    const name = (error as { name?: unknown } | null)?.name
    if (name === 'TimeoutError') {
      return new ShoalError(
        ErrorCodes.API,
        `the Shoal API at ${this.server} did not answer within ${this.#connection.timeoutMs / 1000}s (see --request-timeout)`,
        { cause: error, retriable: true }
      )
    }
    if (name === 'AbortError') return new ShoalError(ErrorCodes.API, 'interrupted', { cause: error })
    const code = errorCode(error)
    const reason = code === undefined ? innermostMessage(error) : (networkReasons[code] ?? code)
    const hint = code === 'ECONNREFUSED' ? ' (is shoal controller running?)' : ''
    return new ShoalError(ErrorCodes.API, `cannot reach the Shoal API at ${this.server}: ${reason}${hint}`, {
      cause: error,
      retriable: true
    })
  }
}

const networkReasons: Readonly<Record<string, string>> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host not found (temporary DNS failure)',
  ETIMEDOUT: 'connection timed out',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  UND_ERR_CONNECT_TIMEOUT: 'connection timed out',
  UND_ERR_SOCKET: 'the connection closed unexpectedly',
  EPROTO: 'TLS/protocol error'
}

/** The system error code behind fetch's `TypeError: fetch failed` (its cause, or the first of an AggregateError). */
function errorCode(error: unknown): string | undefined {
  const seen = new Set<unknown>()
  let current: unknown = error
  while (typeof current === 'object' && current !== null && !seen.has(current)) {
    seen.add(current)
    const code = (current as { code?: unknown }).code
    if (typeof code === 'string') return code
    const inner = (current as { errors?: unknown }).errors
    if (Array.isArray(inner) && inner.length > 0) {
      const codes = inner.map(errorCode).filter(c => c !== undefined)
      if (codes.length > 0) return codes[0]
    }
    current = (current as { cause?: unknown }).cause
  }
  return undefined
}

function innermostMessage(error: unknown): string {
  let current: unknown = error
  let message = String(error)
  while (current instanceof Error) {
    message = current.message
    current = current.cause
  }
  return message
}

function parseJson(raw: string): unknown {
  if (raw.trim() === '') return undefined
  try {
    return JSON.parse(raw) as unknown
  } catch {
    return undefined
  }
}

function collectionPath(info: KindInfo, namespace: string | undefined): string {
  const base = info.group === '' ? `/api/${info.version}` : `/apis/${info.group}/${info.version}`
  return namespace === undefined || !info.namespaced
    ? `${base}/${info.plural}`
    : `${base}/namespaces/${encodeURIComponent(namespace)}/${info.plural}`
}

function objectPath(info: KindInfo, namespace: string, name: string): string {
  return `${collectionPath(info, namespace)}/${encodeURIComponent(name)}`
}
