import { createServer } from 'node:http'
import type { IncomingMessage, Server, ServerResponse } from 'node:http'
import { createServer as createHttpsServer } from 'node:https'
import type { AddressInfo } from 'node:net'
import { request as httpRequest } from 'undici'
import type { Dispatcher } from 'undici'
import { peerAgent } from '../auth/index.ts'
import type { ApiGuard, ApiTls, Principal } from '../auth/index.ts'
import {
  apiVersionOf,
  kindByPath,
  kinds,
  matchesSelector,
  parseManifests,
  parseSelector,
  validateObject
} from '../api/index.ts'
import type { KindInfo, ShoalResource } from '../api/index.ts'
import { ErrorCodes, ShoalError, invalid, isShoalError } from '../errors/index.ts'
import { checkSealedSecret, presentSecret, sealSecret } from '../secrets/index.ts'
import type { SecretKey } from '../secrets/index.ts'
import { isKafkaSource, isSealedSecret } from '../store/index.ts'
import type { ResourceStore, StoredEntry, WriteOp, WriteResult } from '../store/index.ts'
import { openApiDocument } from './openapi.ts'
import { readBody } from './read-body.ts'
import { failure, statusOf, success } from './status.ts'
import type { StatusBody } from './status.ts'

export interface ApiServerOptions {
  readonly host?: string
  readonly port?: number
  /** Largest accepted request body. */
  readonly maxBodyBytes?: number
  /** How long a write may wait for its bucket's owner (during a rebalance) before it answers 503. */
  readonly writeTimeoutMs?: number
  readonly log?: (level: 'info' | 'warn' | 'error', message: string, fields?: Record<string, unknown>) => void
  /** How a stored entry is shown: the controller merges live state (placements, conditions) into status. */
  readonly present?: (entry: StoredEntry) => unknown
  /** Objects that exist without a stored resource: live dispatchers that were never cordoned. */
  readonly liveObjects?: (info: KindInfo, stored: ReadonlySet<string>) => unknown[]
  readonly liveObject?: (info: KindInfo, name: string) => unknown
  /** Tokens, tenants and request limits (docs/security.md); absent: single-tenant, every request allowed. */
  readonly guard?: ApiGuard
  /** Serve HTTPS with this certificate; calls to other replicas then trust its CAs. */
  readonly tls?: ApiTls
  /** Seals Secret values before they are written or forwarded (docs/secrets.md); absent: Secrets are refused. */
  readonly secretKey?: SecretKey
}

/** Answers a request for a path it serves and returns true, or returns false and leaves the response alone. */
export type PathHandler = (req: IncomingMessage, res: ServerResponse, path: string) => boolean

/** Told of each response once it is sent: method, path, status and seconds taken. */
export type RequestObserver = (method: string, path: string, status: number, seconds: number) => void

/** The scheduler leader's rebalance operations, on the replica that leads. */
export interface Rebalancer {
  propose(): Promise<unknown>
  approve(revision: number): Promise<unknown>
  /** Every autoscaled source: scale, lag, why (`GET /shoal/v1/autoscaling`). */
  autoscaling?(): Promise<unknown>
  /** The dispatcher pool's decision (`GET /shoal/v1/pool`, docs/pool.md). */
  pool?(): Promise<unknown>
}

/** `GET|POST /shoal/v1/namespaces/NS/kafkasources/NAME/offsets`: any replica answers (it asks Kafka). */
export interface OffsetOperations {
  read(namespace: string, name: string): Promise<unknown>
  reset(namespace: string, name: string, to: unknown): Promise<unknown>
}

export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024
const FORWARDED_HEADER = 'x-shoal-forwarded'
const INTERNAL_WRITES = '/internal/v1/writes'
/** The scheduler's rebalance proposal and its approval. */
const REBALANCE = '/shoal/v1/rebalance'
/** This replica's buckets and every replica of the current group generation. */
const CONTROLLERS = '/internal/v1/controllers'
/** The leader's autoscalers. */
const AUTOSCALING = '/shoal/v1/autoscaling'
/** The leader's dispatcher pool decision. */
const POOL = '/shoal/v1/pool'
/** A KafkaSource's committed offsets (GET) and their reset (POST {reset}). */
const OFFSETS = /^\/shoal\/v1\/namespaces\/([^/]+)\/kafkasources\/([^/]+)\/offsets$/

/**
 * The resource API: Kubernetes-style paths over the store. Any replica answers reads from its own copy
 * of the log; writes go to the owner of the key's bucket, forwarded by whichever replica got them.
 */
export class ApiServer {
  readonly #options: ApiServerOptions
  readonly #server: Server
  readonly #guard: ApiGuard | undefined
  readonly #peers: Peers
  #store: ResourceStore | undefined
  #rebalancer: Rebalancer | undefined
  readonly #mounted: PathHandler[] = []
  #observer: RequestObserver | undefined
  #offsets: OffsetOperations | undefined
  #url = ''

  constructor(options: ApiServerOptions) {
    this.#options = options
    this.#guard = options.guard
    this.#peers = {
      headers: options.guard?.internalHeaders() ?? {},
      ...(options.tls === undefined ? {} : { dispatcher: peerAgent(options.tls) })
    }
    const handler = (req: IncomingMessage, res: ServerResponse) => {
      this.#handle(req, res).catch(error => this.#send(res, statusOf(error)))
    }
    this.#server =
      options.tls === undefined
        ? createServer(handler)
        : (createHttpsServer({ cert: options.tls.cert, key: options.tls.key }, handler) as unknown as Server)
    this.#server.keepAliveTimeout = 5_000
  }

  get url(): string {
    return this.#url
  }

  async listen(): Promise<string> {
    await listenOn(this.#server, this.#options.port ?? 8080, this.#options.host ?? '127.0.0.1')
    this.#url = urlOf(this.#server, this.#options.tls === undefined ? 'http' : 'https')
    return this.#url
  }

  async close(): Promise<void> {
    await new Promise<void>(resolve => {
      this.#server.close(() => resolve())
      this.#server.closeIdleConnections()
    })
  }

  /**
   * Connects the store. The server listens first because the store announces this server's URL to the
   * other replicas; until then every request but /healthz gets 503.
   */
  attach(store: ResourceStore, rebalancer?: Rebalancer, offsets?: OffsetOperations): void {
    this.#store = store
    this.#rebalancer = rebalancer
    this.#offsets = offsets
  }

  /** Serves more paths (a controller's /metrics and /ui) ahead of the API's own; a handler returns false to pass. */
  mount(handler: PathHandler): void {
    this.#mounted.push(handler)
  }

  /** Hears of every answered request, with how long it took. */
  observe(observer: RequestObserver): void {
    this.#observer = observer
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    // The request target is a path: `//x` must not be read as a host, and what does not parse is a 400.
    const requestTarget = req.url ?? '/'
    const url =
      requestTarget.startsWith('/') && URL.canParse(`http://localhost${requestTarget}`)
        ? new URL(`http://localhost${requestTarget}`)
        : undefined
    if (url === undefined) return this.#send(res, failure(400, 'BadRequest', 'the request target must be a path'))
    const path = url.pathname.replace(/\/+$/, '') || '/'
    const method = req.method ?? 'GET'
    const started = performance.now()
    res.once('finish', () => this.#observer?.(method, path, res.statusCode, (performance.now() - started) / 1000))
    if (path === '/healthz') return this.#text(res, 200, 'ok')
    // Everything but the health checks passes the guard first, mounted paths (/metrics, /ui) included: they show
    // every tenant's sources, so in multi-tenant mode they need an admin token.
    const verdict = path === '/readyz' ? undefined : this.#guard?.check(req.headers.authorization, path, method)
    if (verdict?.kind === 'deny') {
      return this.#send(res, failure(verdict.code, verdict.reason, verdict.message), verdict.headers)
    }
    for (const mounted of this.#mounted) if (mounted(req, res, path)) return
    const store = this.#store
    if (!store) return this.#send(res, failure(503, 'ServiceUnavailable', 'the controller is starting; retry'))
    if (path === '/readyz') {
      const ready = store.assignment.generation >= 0
      return this.#text(res, ready ? 200 : 503, ready ? 'ok' : 'not ready: not yet a member of the controllers group')
    }
    const principal: Principal = verdict?.principal ?? { kind: 'open' }
    if (path === '/openapi.json') return this.#json(res, 200, openApiDocument())
    if (path === '/apis') return this.#json(res, 200, discovery())
    if (path === INTERNAL_WRITES && method === 'POST') return this.#internalWrite(req, res)
    if (path === REBALANCE && (method === 'GET' || method === 'POST')) return this.#rebalance(req, res, method)
    if (path === AUTOSCALING && method === 'GET')
      return this.#fromLeader(req, res, AUTOSCALING, async () => {
        const items = await this.#rebalancer?.autoscaling?.()
        return items === undefined ? undefined : { items }
      })
    if (path === POOL && method === 'GET')
      return this.#fromLeader(req, res, POOL, async () => this.#rebalancer?.pool?.())
    const offsets = OFFSETS.exec(path)
    if (offsets && (method === 'GET' || method === 'POST'))
      return this.#sourceOffsets(req, res, method, decodeURIComponent(offsets[1]!), decodeURIComponent(offsets[2]!))
    if (path === CONTROLLERS && method === 'GET') {
      return this.#json(res, 200, {
        self: { replicaId: store.replicaId, ...store.assignment, leader: store.isLeader },
        buckets: store.buckets,
        replicas: store.controllers().map(c => ({ ...c, leader: c.buckets.includes(0) }))
      })
    }

    // Kubernetes serves its core group (Secrets) under /api/v1: the same as /apis/<empty group>/v1.
    const parts = decodePath(path.startsWith('/api/') ? `/apis//${path.slice('/api/'.length)}` : path)
    if (parts === undefined)
      return this.#send(res, failure(400, 'BadRequest', `the path ${path} is not valid percent-encoding`))
    if (parts[0] !== 'apis' || parts.length < 4) {
      return this.#send(res, failure(404, 'NotFound', `the server could not find the requested resource (${path})`))
    }
    const [, group = '', version = ''] = parts
    let namespace: string | undefined
    let plural: string
    let name: string | undefined
    if (parts[3] === 'namespaces' && parts.length >= 6 && parts.length <= 7) {
      namespace = parts[4]
      plural = parts[5] ?? ''
      name = parts[6]
    } else if (parts.length === 4 || parts.length === 5) {
      plural = parts[3] ?? ''
      name = parts[4]
    } else {
      return this.#send(res, failure(404, 'NotFound', `the server could not find the requested resource (${path})`))
    }
    const info = kindByPath(group, version, plural)
    if (!info) {
      return this.#send(
        res,
        failure(
          404,
          'NotFound',
          `the server could not find the requested resource: ${group}/${version} ${plural}; it serves ${servedList()}`
        )
      )
    }

    // Cluster-wide kinds (Dispatcher) have no namespace in their paths; namespaced ones need it for one object.
    if (!info.namespaced) {
      if (namespace !== undefined)
        return this.#send(
          res,
          failure(404, 'NotFound', `${info.plural} are cluster-wide: use ${path.replace(/\/namespaces\/[^/]+/, '')}`)
        )
      namespace = ''
    } else if (name !== undefined && namespace === undefined) {
      return this.#send(res, failure(404, 'NotFound', `the server could not find the requested resource (${path})`))
    }
    if (name === undefined) {
      if (method === 'GET')
        return this.#list(
          res,
          info,
          info.namespaced ? namespace : undefined,
          url.searchParams.get('labelSelector') ?? '',
          verdict?.visible
        )
      if (method === 'POST' && namespace !== undefined) return this.#create(req, res, info, namespace, principal)
      return this.#send(res, failure(405, 'MethodNotAllowed', `${method} is not allowed on ${path}`))
    }
    const key = `${info.kind}/${namespace}/${name}`
    const target = { kind: info.plural, name }
    try {
      if (method === 'GET') {
        const entry = await store.get(key)
        const presented = entry ? this.#present(entry) : this.#options.liveObject?.(info, name)
        if (!presented) throw new ShoalError(ErrorCodes.NOT_FOUND, `${info.plural}.${info.group} "${name}" not found`)
        return this.#json(res, 200, presented)
      }
      if (method === 'PUT') return await this.#update(req, res, info, namespace!, name, principal)
      if (method === 'DELETE') {
        const expected = url.searchParams.get('resourceVersion') ?? undefined
        const op: WriteOp = { kind: 'delete', key, ...(expected ? { expectedVersion: expected } : {}) }
        await this.#execute(op, req)
        return this.#json(res, 200, success(`${info.plural}.${info.group} "${name}" deleted`, target))
      }
      return this.#send(res, failure(405, 'MethodNotAllowed', `${method} is not allowed on ${path}`))
    } catch (error) {
      if (isShoalError(error, ErrorCodes.NOT_FOUND)) {
        return this.#send(res, failure(404, 'NotFound', `${info.plural}.${info.group} "${name}" not found`, target))
      }
      return this.#send(res, statusOf(error, target))
    }
  }

  async #list(
    res: ServerResponse,
    info: KindInfo,
    namespace: string | undefined,
    selectorText: string,
    visible?: (namespace: string) => boolean
  ): Promise<void> {
    const selector = parseSelector(selectorText)
    if (!selector.ok) return this.#send(res, failure(400, 'BadRequest', `labelSelector: ${selector.message}`))
    const prefix = namespace === undefined ? `${info.kind}/` : `${info.kind}/${namespace}/`
    // A list across namespaces shows a tenant only its own namespaces' objects.
    const inScope = (key: string) => visible === undefined || visible(key.split('/')[1] ?? '')
    const entries = await this.#store!.list(key => key.startsWith(prefix) && inScope(key))
    const items = [
      ...entries.map(e => this.#present(e)),
      ...(this.#options.liveObjects?.(info, new Set(entries.map(e => e.object.metadata.name))) ?? [])
    ].filter(o => matchesSelector(selector.requirements, labelsOf(o)))
    this.#json(res, 200, { apiVersion: apiVersionOf(info), kind: `${info.kind}List`, metadata: {}, items })
  }

  async #create(
    req: IncomingMessage,
    res: ServerResponse,
    info: KindInfo,
    namespace: string,
    principal: Principal
  ): Promise<void> {
    const object = await this.#admit(req, info, namespace, undefined, principal)
    const result = await this.#execute({ kind: 'create', object: toNew(object, this.#options.secretKey) }, req)
    this.#json(res, 201, this.#present(result.entry))
  }

  async #update(
    req: IncomingMessage,
    res: ServerResponse,
    info: KindInfo,
    namespace: string,
    name: string,
    principal: Principal
  ): Promise<void> {
    const object = await this.#admit(req, info, namespace, name, principal)
    const expected = object.metadata.resourceVersion
    const op: WriteOp = {
      kind: 'update',
      object: toNew(object, this.#options.secretKey),
      ...(expected ? { expectedVersion: expected } : {})
    }
    const result = await this.#execute(op, req)
    this.#json(res, 200, this.#present(result.entry))
  }

  /** Parses and validates a body, and checks it names what the path names. */
  async #admit(
    req: IncomingMessage,
    info: KindInfo,
    namespace: string,
    name: string | undefined,
    principal: Principal
  ): Promise<ShoalResource> {
    checkContentType(req)
    const maxBytes = this.#options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES
    const text = await readBody(req, maxBytes)
    const documents = parseManifests(text, { maxBytes })
    if (documents.length !== 1) {
      throw new ShoalError(
        ErrorCodes.MALFORMED,
        `the request body must hold exactly one object, not ${documents.length}`
      )
    }
    const body = documents[0]
    if (info.namespaced && typeof body === 'object' && body !== null && !Array.isArray(body)) {
      const metadata = (body as { metadata?: unknown }).metadata
      if (typeof metadata === 'object' && metadata !== null && !('namespace' in metadata)) {
        ;(metadata as Record<string, unknown>).namespace = namespace
      }
    }
    const object = validateObject(body)
    const fields = []
    if (object.kind !== info.kind || object.apiVersion !== apiVersionOf(info)) {
      fields.push({
        path: 'kind',
        message: `the body is a ${object.apiVersion} ${object.kind}, the path names ${apiVersionOf(info)} ${info.kind}`
      })
    }
    if (object.metadata.namespace !== namespace) {
      fields.push({
        path: 'metadata.namespace',
        message: `"${object.metadata.namespace}" does not match the namespace of the request ("${namespace}")`
      })
    }
    if (name !== undefined && object.metadata.name !== name) {
      fields.push({
        path: 'metadata.name',
        message: `"${object.metadata.name}" does not match the name in the path ("${name}")`
      })
    }
    if (fields.length > 0)
      throw new ShoalError(
        ErrorCodes.INVALID,
        `${info.kind} does not match the request: ${fields.map(f => `${f.path}: ${f.message}`).join('; ')}`,
        { fields }
      )
    if (this.#guard?.multiTenant) {
      const stored = name === undefined ? undefined : await this.#store!.get(`${info.kind}/${namespace}/${name}`)
      const storedGroup = stored && isKafkaSource(stored) ? stored.object.spec.consumerGroup : undefined
      const refused = this.#guard.admissionErrors(principal, object, storedGroup)
      if (refused.length > 0) throw invalid(`${info.kind} ${namespace}/${object.metadata.name}`, refused)
    }
    return object
  }

  /** Runs a write on the bucket's owner: here, or forwarded; retried while ownership moves. */
  async #execute(op: WriteOp, req: IncomingMessage | undefined): Promise<WriteResult> {
    const store = this.#store!
    const forwarded = req?.headers[FORWARDED_HEADER] !== undefined
    const timeout = forwarded ? 2_000 : (this.#options.writeTimeoutMs ?? 15_000)
    const deadline = Date.now() + timeout
    const bucket = store.bucketOf(keyOf(op))
    for (let attempt = 0; ; attempt++) {
      const owner = store.ownerOf(bucket)
      try {
        if (owner.kind === 'self') return await store.write(op)
        if (owner.kind === 'remote' && !forwarded) return await forward(owner.url, op, this.#peers)
        throw new ShoalError(
          ErrorCodes.UNAVAILABLE,
          `no controller owns bucket ${bucket} right now (rebalance in progress); retry`,
          { retriable: true }
        )
      } catch (error) {
        if (!isShoalError(error) || !error.retriable || Date.now() >= deadline) throw error
        await new Promise(resolve => setTimeout(resolve, Math.min(500, 25 * 2 ** attempt)))
      }
    }
  }

  /** The scheduler's rebalance proposal (GET) and its approval (POST {revision}): answered by the leader. */
  async #rebalance(req: IncomingMessage, res: ServerResponse, method: string): Promise<void> {
    try {
      const body = method === 'POST' ? await readBody(req, 64 * 1024) : ''
      const store = this.#store!
      const leader = store.ownerOf(0)
      if (leader.kind === 'remote' && req.headers[FORWARDED_HEADER] === undefined) {
        const response = await httpRequest(`${leader.url}${REBALANCE}`, {
          method,
          headers: { 'content-type': 'application/json', [FORWARDED_HEADER]: '1', ...this.#peers.headers },
          ...(this.#peers.dispatcher === undefined ? {} : { dispatcher: this.#peers.dispatcher }),
          ...(method === 'POST' ? { body } : {}),
          headersTimeout: 30_000,
          bodyTimeout: 30_000
        })
        return this.#json(res, response.statusCode, await response.body.json())
      }
      if (leader.kind !== 'self' || !this.#rebalancer) {
        throw new ShoalError(ErrorCodes.UNAVAILABLE, 'no scheduler leader right now; retry', { retriable: true })
      }
      if (method === 'GET') return this.#json(res, 200, await this.#rebalancer.propose())
      const revision = (JSON.parse(body || '{}') as { revision?: unknown }).revision
      if (typeof revision !== 'number' || !Number.isInteger(revision)) {
        throw new ShoalError(ErrorCodes.INVALID, 'revision: required, the revision of the proposal being approved', {
          fields: [{ path: 'revision', message: 'required: the revision of the proposal being approved' }]
        })
      }
      return this.#json(res, 200, await this.#rebalancer.approve(revision))
    } catch (error) {
      return this.#send(res, statusOf(error))
    }
  }

  /** What only the leader knows (its autoscalers, the pool), forwarded to the leader by any other replica. */
  async #fromLeader(
    req: IncomingMessage,
    res: ServerResponse,
    path: string,
    answer: () => Promise<unknown>
  ): Promise<void> {
    try {
      const leader = this.#store!.ownerOf(0)
      if (leader.kind === 'remote' && req.headers[FORWARDED_HEADER] === undefined) {
        const response = await httpRequest(`${leader.url}${path}`, {
          headers: { [FORWARDED_HEADER]: '1', ...this.#peers.headers },
          ...(this.#peers.dispatcher === undefined ? {} : { dispatcher: this.#peers.dispatcher }),
          headersTimeout: 10_000,
          bodyTimeout: 10_000
        })
        return this.#json(res, response.statusCode, await response.body.json())
      }
      const body = leader.kind === 'self' ? await answer() : undefined
      if (body === undefined) {
        throw new ShoalError(ErrorCodes.UNAVAILABLE, 'no scheduler leader right now; retry', { retriable: true })
      }
      return this.#json(res, 200, body)
    } catch (error) {
      return this.#send(res, statusOf(error))
    }
  }

  async #sourceOffsets(
    req: IncomingMessage,
    res: ServerResponse,
    method: string,
    namespace: string,
    name: string
  ): Promise<void> {
    try {
      if (!this.#offsets) throw new ShoalError(ErrorCodes.UNAVAILABLE, 'offsets are not served here', {})
      if (method === 'GET') return this.#json(res, 200, await this.#offsets.read(namespace, name))
      let body: { reset?: unknown }
      try {
        body = JSON.parse((await readBody(req, 64 * 1024)) || '{}') as { reset?: unknown }
      } catch {
        throw new ShoalError(ErrorCodes.MALFORMED, 'the body must be JSON: {"reset": "earliest"}')
      }
      return this.#json(res, 200, await this.#offsets.reset(namespace, name, body.reset))
    } catch (error) {
      return this.#send(res, statusOf(error, { kind: 'kafkasources', name }))
    }
  }

  async #internalWrite(req: IncomingMessage, res: ServerResponse): Promise<void> {
    try {
      const text = await readBody(req, (this.#options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES) * 2)
      const op = admitForwarded(text)
      const result = await this.#execute(op, req)
      this.#json(res, 200, { result })
    } catch (error) {
      this.#send(res, statusOf(error))
    }
  }

  #present(entry: StoredEntry): unknown {
    // A Secret is shown by its key names only, whoever presents the other kinds.
    if (isSealedSecret(entry)) return presentSecret(entry)
    return (this.#options.present ?? plainPresentation)(entry)
  }

  #send(res: ServerResponse, status: StatusBody, extraHeaders: Readonly<Record<string, string>> = {}): void {
    if (status.code >= 500)
      this.#options.log?.('warn', 'request failed', { code: status.code, message: status.message })
    const headers: Record<string, string> = status.code === 503 ? { 'retry-after': '1' } : {}
    this.#json(res, status.code, status, { ...headers, ...extraHeaders })
  }

  #json(res: ServerResponse, code: number, body: unknown, headers: Record<string, string> = {}): void {
    if (res.headersSent) return
    const text = JSON.stringify(body)
    // An answer given before the body was read (refused, unknown path): close the connection, so the client's
    // next request never meets the reset that discarding the rest of the body would cause.
    const close = res.req.complete ? {} : { connection: 'close' }
    res.writeHead(code, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(text),
      ...headers,
      ...close
    })
    res.end(text)
  }

  #text(res: ServerResponse, code: number, body: string): void {
    res.writeHead(code, { 'content-type': 'text/plain' })
    res.end(body)
  }
}

/** How this replica calls the others: the internal token, and a TLS agent that trusts their certificates. */
interface Peers {
  readonly headers: Readonly<Record<string, string>>
  readonly dispatcher?: Dispatcher
}

async function forward(url: string, op: WriteOp, peers: Peers): Promise<WriteResult> {
  let response
  try {
    response = await httpRequest(`${url}${INTERNAL_WRITES}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', [FORWARDED_HEADER]: '1', ...peers.headers },
      ...(peers.dispatcher === undefined ? {} : { dispatcher: peers.dispatcher }),
      body: JSON.stringify({ op }),
      headersTimeout: 10_000,
      bodyTimeout: 10_000
    })
  } catch (error) {
    throw new ShoalError(ErrorCodes.UNAVAILABLE, `the owner at ${url} did not answer: ${(error as Error).message}`, {
      retriable: true,
      cause: error
    })
  }
  const body = (await response.body.json()) as { result?: WriteResult } & Partial<StatusBody>
  if (response.statusCode === 200 && body.result) return body.result
  throw errorFromStatus(body, response.statusCode)
}

/** Turns a Status from another replica back into the error it stood for. */
function errorFromStatus(body: Partial<StatusBody>, httpCode: number): ShoalError {
  const codeByReason: Record<string, (typeof ErrorCodes)[keyof typeof ErrorCodes]> = {
    Invalid: ErrorCodes.INVALID,
    BadRequest: ErrorCodes.MALFORMED,
    NotFound: ErrorCodes.NOT_FOUND,
    AlreadyExists: ErrorCodes.CONFLICT,
    Conflict: ErrorCodes.CONFLICT,
    RequestEntityTooLarge: ErrorCodes.TOO_LARGE,
    ServiceUnavailable: ErrorCodes.UNAVAILABLE,
    Unauthorized: ErrorCodes.UNAUTHENTICATED,
    Forbidden: ErrorCodes.FORBIDDEN
  }
  const code = codeByReason[body.reason ?? ''] ?? ErrorCodes.INTERNAL
  const fields = (body.details?.causes ?? []).map(c => ({ path: c.field, message: c.message }))
  return new ShoalError(code, body.message ?? `HTTP ${httpCode}`, { fields, retriable: httpCode === 503 })
}

/**
 * A write another replica forwarded. It was validated there; it is validated again here, because the owner
 * is the one place every write passes and must not trust its callers to have done so.
 */
function admitForwarded(text: string): WriteOp {
  let op: WriteOp
  try {
    op = (JSON.parse(text) as { op: WriteOp }).op
  } catch {
    throw new ShoalError(ErrorCodes.MALFORMED, 'a forwarded write must be JSON')
  }
  switch (op?.kind) {
    case 'create':
    case 'update': {
      // Secrets arrive sealed (the receiving replica sealed them): check their shape, never expect clear values.
      if ((op.object as { kind?: unknown } | undefined)?.kind === 'Secret') {
        const expected = op.kind === 'update' ? op.expectedVersion : undefined
        return {
          kind: op.kind,
          object: checkSealedSecret(op.object),
          ...(expected === undefined ? {} : { expectedVersion: String(expected) })
        }
      }
      const object = validateObject(op.object)
      const expected = op.kind === 'update' ? op.expectedVersion : undefined
      return {
        kind: op.kind,
        object: toNew(object),
        ...(expected === undefined ? {} : { expectedVersion: String(expected) })
      }
    }
    case 'delete':
      if (typeof op.key === 'string' && op.key.split('/').length === 3) return op
      break
    default:
      break
  }
  throw new ShoalError(ErrorCodes.MALFORMED, 'a forwarded write must be a create, update or delete of one resource')
}

function keyOf(op: WriteOp): string {
  return op.kind === 'create' || op.kind === 'update'
    ? `${op.object.kind}/${op.object.metadata.namespace}/${op.object.metadata.name}`
    : op.key
}

function toNew(object: ShoalResource, secretKey?: SecretKey): Extract<WriteOp, { kind: 'create' }>['object'] {
  if (object.kind === 'Secret') {
    if (secretKey === undefined) {
      throw new ShoalError(
        ErrorCodes.SECRET_KEY_MISSING,
        'this controller has no secret key, so it stores no Secret: start it with --secret-key-file FILE or SHOAL_SECRET_KEY'
      )
    }
    return sealSecret(object, secretKey)
  }
  const { name, namespace, labels, annotations } = object.metadata
  return {
    apiVersion: object.apiVersion,
    kind: object.kind,
    metadata: { name, namespace, ...(labels ? { labels } : {}), ...(annotations ? { annotations } : {}) },
    spec: object.spec
  }
}

function plainPresentation(entry: StoredEntry): unknown {
  return { ...entry.object, status: entry.status ?? {} }
}

function labelsOf(object: unknown): Record<string, string> {
  return ((object as { metadata?: { labels?: Record<string, string> } }).metadata?.labels ?? {}) as Record<
    string,
    string
  >
}

function checkContentType(req: IncomingMessage): void {
  const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase()
  const accepted = [
    '',
    'application/json',
    'application/yaml',
    'application/x-yaml',
    'text/yaml',
    'text/x-yaml',
    'text/plain'
  ]
  if (!accepted.includes(type)) {
    throw new ShoalError(
      ErrorCodes.MALFORMED,
      `content-type ${type} is not supported; send application/json or application/yaml`
    )
  }
}

function discovery(): unknown {
  return {
    kind: 'APIResourceList',
    resources: kinds.map(k => ({
      group: k.group,
      version: k.version,
      kind: k.kind,
      name: k.plural,
      singularName: k.singular,
      shortNames: k.shortNames,
      namespaced: true
    }))
  }
}

function servedList(): string {
  return kinds.map(k => `${apiVersionOf(k)} ${k.plural}`).join(', ')
}

function listenOn(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException) => {
      reject(
        error.code === 'EADDRINUSE'
          ? new ShoalError(ErrorCodes.PORT_IN_USE, `port ${port} is in use; choose another with --port`)
          : error
      )
    }
    server.once('error', onError)
    server.listen(port, host, () => {
      server.off('error', onError)
      resolve()
    })
  })
}

function urlOf(server: Server, scheme: 'http' | 'https'): string {
  const address = server.address() as AddressInfo
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address
  return `${scheme}://${host}:${address.port}`
}

/** The decoded segments of a path, or undefined when its percent-encoding is broken (`%zz`). */
function decodePath(path: string): string[] | undefined {
  try {
    return path.split('/').slice(1).map(decodeURIComponent)
  } catch {
    return undefined
  }
}
