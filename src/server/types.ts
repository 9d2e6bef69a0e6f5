import type { IncomingMessage, ServerResponse } from 'node:http'
import type { KindInfo } from '../api/index.ts'
import type { ApiGuard, ApiTls, Principal } from '../auth/index.ts'
import type { SecretKey } from '../secrets/index.ts'
import type { ResourceStore, StoredEntry } from '../store/index.ts'
import type { Peers } from './forward.ts'
import type { StatusBody } from './status.ts'
import type { Log } from '../log/index.ts'

export interface ApiServerOptions {
  readonly host?: string
  readonly port?: number
  /** Largest accepted request body. */
  readonly maxBodyBytes?: number
  /** How long a write may wait for its bucket's owner (during a rebalance) before it answers 503. */
  readonly writeTimeoutMs?: number
  readonly log?: Log
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

/** What the server uses of the resource store. */
export type ServedStore = Pick<
  ResourceStore,
  'replicaId' | 'buckets' | 'assignment' | 'isLeader' | 'controllers' | 'ownerOf' | 'get' | 'list' | 'writeAtOwner'
>

/** What every handler may use: the attached store and operations, and how to answer. */
export interface ServerContext {
  readonly options: ApiServerOptions
  readonly store: ServedStore
  readonly peers: Peers
  readonly rebalancer: Rebalancer | undefined
  readonly offsets: OffsetOperations | undefined
  /** How an entry is shown to clients: a Secret by its key names only, the rest as `options.present` says. */
  present(entry: StoredEntry): unknown
  /** Answers with a Status (a 503 with `retry-after`), logging a server-side failure. */
  send(res: ServerResponse, status: StatusBody, extraHeaders?: Readonly<Record<string, string>>): void
}

/** One request as its handler sees it: the route's params decoded, the caller known. */
export interface ApiRequest {
  readonly req: IncomingMessage
  readonly res: ServerResponse
  readonly method: string
  /** The path without trailing slashes. */
  readonly path: string
  readonly query: URLSearchParams
  readonly params: Readonly<Record<string, string>>
  readonly principal: Principal
  /** Which namespaces a list across namespaces may show (a tenant's own); absent: all. */
  readonly visible: ((namespace: string) => boolean) | undefined
}

/** Answers one routed request; what it throws is answered as a Status. */
export type Handler = (server: ServerContext, request: ApiRequest) => Promise<void> | void
