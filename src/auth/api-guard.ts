import type { ShoalResource } from '../api/index.ts'
import { SinkPolicy } from '../delivery/index.ts'
import type { FieldError } from '../errors/index.ts'
import { authorize, classifyRequest } from './authorize.ts'
import { RateLimiter } from './rate-limiter.ts'
import { tenantRuleErrors } from './tenant-rules.ts'
import { tokenDigest } from './tokens.ts'
import type { Principal, TokenRegistry } from './tokens.ts'

export interface ApiGuardOptions {
  /** The tokens file's contents; absent = single-tenant mode: every request is allowed, as before tenants. */
  readonly tokens?: TokenRegistry
  /** The installation's prefix (its internal topic and group names). */
  readonly prefix: string
  /** How a Service ref becomes a URL, to check sinks given as refs. */
  readonly serviceUrlTemplate: string
  /** Forbidden sink ranges and Shoal's own endpoints (multi-tenant mode only). */
  readonly sinkPolicy?: SinkPolicy
  /** Milliseconds, monotonic; for the rate limiter. */
  readonly now?: () => number
}

/** What the API does with a request before routing it. */
export type GuardVerdict =
  | { readonly kind: 'allow'; readonly principal: Principal; readonly visible?: (namespace: string) => boolean }
  | {
      readonly kind: 'deny'
      readonly code: 401 | 403 | 404 | 429
      readonly reason: string
      readonly message: string
      readonly headers: Readonly<Record<string, string>>
    }

const OPEN: Principal = Object.freeze({ kind: 'open' })
const INTERNAL: Principal = Object.freeze({ kind: 'internal' })

/** Authentication, authorization, per-token limits and tenant rules of the API, in one place. */
export class ApiGuard {
  readonly #tokens: TokenRegistry | undefined
  readonly #internalDigest: string | undefined
  readonly #limiter: RateLimiter
  readonly #prefix: string
  readonly #serviceUrlTemplate: string
  readonly #sinkPolicy: SinkPolicy

  constructor(options: ApiGuardOptions) {
    this.#tokens = options.tokens
    this.#internalDigest = options.tokens && tokenDigest(options.tokens.internalToken)
    this.#limiter = new RateLimiter(options.now)
    this.#prefix = options.prefix
    this.#serviceUrlTemplate = options.serviceUrlTemplate
    this.#sinkPolicy = options.sinkPolicy ?? new SinkPolicy()
  }

  /** Whether tokens are configured. */
  get multiTenant(): boolean {
    return this.#tokens !== undefined
  }

  /** Headers a replica sends to another with a forwarded call. */
  internalHeaders(): Record<string, string> {
    return this.#tokens === undefined ? {} : { authorization: `Bearer ${this.#tokens.internalToken}` }
  }

  /** Authenticates, limits and authorizes one request from its Authorization header, path and method. */
  check(authorization: string | undefined, path: string, method: string): GuardVerdict {
    const principal = this.#authenticate(authorization)
    if (principal === undefined) {
      return deny(401, 'Unauthorized', 'a bearer token is required (shoal --token or SHOAL_TOKEN)', {
        'www-authenticate': 'Bearer realm="shoal"'
      })
    }
    if ((principal.kind === 'tenant' || principal.kind === 'admin') && principal.rateLimit !== undefined) {
      const limit = principal.rateLimit
      const verdict = this.#limiter.take(principal.name, limit)
      if (verdict.kind === 'limited') {
        return deny(
          429,
          'TooManyRequests',
          `token "${principal.name}" is over its limit of ${limit.requestsPerSecond} requests per second (burst ${limit.burst}); retry after ${verdict.retryAfterSeconds}s`,
          { 'retry-after': String(verdict.retryAfterSeconds) }
        )
      }
    }
    const decision = authorize(principal, classifyRequest(path, method))
    if (decision.kind === 'deny') {
      return deny(decision.code, decision.code === 404 ? 'NotFound' : 'Forbidden', decision.message, {})
    }
    return decision.visible === undefined
      ? { kind: 'allow', principal }
      : { kind: 'allow', principal, visible: decision.visible }
  }

  /**
   * What the tenant rules refuse in an object about to be written (topics, groups, sink refs for tenants;
   * the sink policy for everyone): empty in single-tenant mode.
   */
  admissionErrors(principal: Principal, object: ShoalResource, storedGroup: string | undefined): FieldError[] {
    if (this.#tokens === undefined || principal.kind === 'internal') return []
    return tenantRuleErrors(object, {
      prefix: this.#prefix,
      namespaces: principal.kind === 'tenant' ? principal.namespaces : undefined,
      storedGroup,
      sinkPolicy: this.#sinkPolicy,
      serviceUrlTemplate: this.#serviceUrlTemplate
    })
  }

  #authenticate(authorization: string | undefined): Principal | undefined {
    if (this.#tokens === undefined) return OPEN
    const match = /^Bearer +(\S+) *$/i.exec(authorization ?? '')
    if (match === null) return undefined
    // Tokens are held by digest: the lookup compares hashes, never the secrets themselves.
    const digest = tokenDigest(match[1] as string)
    if (digest === this.#internalDigest) return INTERNAL
    return this.#tokens.byDigest.get(digest)
  }
}

function deny(
  code: 401 | 403 | 404 | 429,
  reason: string,
  message: string,
  headers: Record<string, string>
): GuardVerdict {
  return { kind: 'deny', code, reason, message, headers }
}
