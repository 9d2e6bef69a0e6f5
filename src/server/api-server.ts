import { createServer } from 'node:http'
import type { IncomingMessage, Server, ServerResponse } from 'node:http'
import { createServer as createHttpsServer } from 'node:https'
import type { AddressInfo } from 'node:net'
import { peerAgent } from '../auth/index.ts'
import type { ApiGuard } from '../auth/index.ts'
import { ErrorCodes, ShoalError } from '../errors/index.ts'
import { presentSecret } from '../secrets/index.ts'
import { isSealedSecret } from '../store/index.ts'
import type { StoredEntry } from '../store/index.ts'
import type { Peers } from './forward.ts'
import { sendJson, sendText } from './respond.ts'
import { route } from './routes.ts'
import { failure, pathNotFound, statusOf } from './status.ts'
import type { StatusBody } from './status.ts'
import type {
  ApiServerOptions,
  OffsetOperations,
  PathHandler,
  Rebalancer,
  RequestObserver,
  ServedStore,
  ServerContext
} from './types.ts'

/**
 * The resource API: Kubernetes-style paths over the store. Any replica answers reads from its own copy
 * of the log; writes go to the owner of the key's bucket, forwarded by whichever replica got them.
 */
export class ApiServer {
  readonly #options: ApiServerOptions
  readonly #server: Server
  readonly #guard: ApiGuard | undefined
  readonly #peers: Peers
  #context: ServerContext | undefined
  readonly #mounted: PathHandler[] = []
  #observer: RequestObserver | undefined
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
        : createHttpsServer({ cert: options.tls.cert, key: options.tls.key }, handler)
    this.#server.keepAliveTimeout = 5_000
  }

  get url(): string {
    return this.#url
  }

  /** How this replica calls itself or another replica: the internal token, and a TLS agent that trusts them. */
  get peers(): Peers {
    return this.#peers
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
  attach(store: ServedStore, rebalancer?: Rebalancer, offsets?: OffsetOperations): void {
    this.#context = {
      options: this.#options,
      store,
      peers: this.#peers,
      rebalancer,
      offsets,
      present: entry => this.#present(entry),
      send: (res, status, extraHeaders) => this.#send(res, status, extraHeaders)
    }
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
    if (path === '/healthz') return sendText(res, 200, 'ok')
    // Everything but the health checks passes the guard first, mounted paths (/metrics, /ui) included: they show
    // every tenant's sources, so in multi-tenant mode they need an admin token.
    const verdict = path === '/readyz' ? undefined : this.#guard?.check(req.headers.authorization, path, method)
    if (verdict?.kind === 'deny') {
      return this.#send(res, failure(verdict.code, verdict.reason, verdict.message), verdict.headers)
    }
    for (const mounted of this.#mounted) if (mounted(req, res, path)) return
    const context = this.#context
    if (!context) return this.#send(res, failure(503, 'ServiceUnavailable', 'the controller is starting; retry'))
    const match = route(method, path)
    if (match.kind === 'malformed')
      return this.#send(res, failure(400, 'BadRequest', `the path ${path} is not valid percent-encoding`))
    if (match.kind === 'unmatched') return this.#send(res, pathNotFound(path))
    await match.handler(context, {
      req,
      res,
      method,
      path,
      query: url.searchParams,
      params: match.params,
      principal: verdict?.principal ?? { kind: 'open' },
      visible: verdict?.visible
    })
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
    sendJson(res, status.code, status, { ...headers, ...extraHeaders })
  }
}

function plainPresentation(entry: StoredEntry): unknown {
  return { ...entry.object, status: entry.status ?? {} }
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
