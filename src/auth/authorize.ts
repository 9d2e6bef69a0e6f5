import { kindByPath } from '../api/index.ts'
import type { Principal } from './tokens.ts'

// Who may do what, decided from the request alone (method and path), before anything is read from the
// store: so a refusal never depends on whether the object exists, and never tells (docs/security.md).

export type Verb = 'get' | 'list' | 'create' | 'update' | 'delete' | 'other'

/** A request as authorization sees it. */
export type ApiRequest =
  /** A resource path (`/apis/GROUP/VERSION/…`); `namespace` undefined = every namespace (or a cluster-wide kind). */
  | {
      readonly kind: 'resource'
      readonly verb: Verb
      readonly plural: string
      readonly clusterWide: boolean
      readonly namespace: string | undefined
    }
  /** `/apis`, `/openapi.json`: what the API serves, the same for everyone. */
  | { readonly kind: 'discovery' }
  /** `/internal/…`: controller replicas talking to each other. */
  | { readonly kind: 'internal'; readonly path: string }
  /** Anything else: operations on Shoal itself (rebalance, and endpoints added later). */
  | { readonly kind: 'operator'; readonly path: string }

export type Decision =
  /** `visible`: for lists across namespaces, the namespaces whose objects the caller may see. */
  | { readonly kind: 'allow'; readonly visible?: (namespace: string) => boolean }
  | { readonly kind: 'deny'; readonly code: 403 | 404; readonly message: string }

const DISCOVERY = new Set(['/apis', '/openapi.json', '/version'])

/** Classifies a request path (already stripped of trailing slashes) and method; never throws. */
export function classifyRequest(path: string, method: string): ApiRequest {
  if (DISCOVERY.has(path)) return { kind: 'discovery' }
  if (path === '/internal' || path.startsWith('/internal/')) return { kind: 'internal', path }
  // Operations on one source (`/shoal/v1/namespaces/NS/kafkasources/NAME/offsets`) are scoped like the source.
  const sourceOperation = /^\/shoal\/v1\/namespaces\/([^/]+)\/([^/]+)\/[^/]+\/[^/]+$/.exec(path)
  if (sourceOperation !== null) {
    return {
      kind: 'resource',
      verb: verbOf(method, true),
      plural: safeDecode(sourceOperation[2] ?? ''),
      clusterWide: false,
      namespace: safeDecode(sourceOperation[1] ?? '')
    }
  }
  // Kubernetes' core group (Secrets) lives under /api/v1: read it as /apis/<empty group>/v1.
  const apisPath = path.startsWith('/api/') ? `/apis//${path.slice('/api/'.length)}` : path
  if (!apisPath.startsWith('/apis/')) return { kind: 'operator', path }
  const parts = apisPath.split('/').slice(1).map(safeDecode)
  const [, group = '', version = ''] = parts
  const namespaced = parts[3] === 'namespaces' && parts.length >= 5
  const plural = (namespaced ? parts[5] : parts[3]) ?? ''
  const name = namespaced ? parts[6] : parts[4]
  const info = kindByPath(group, version, plural)
  return {
    kind: 'resource',
    verb: verbOf(method, name !== undefined),
    plural,
    clusterWide: info !== undefined && !info.namespaced,
    namespace: namespaced ? parts[4] : undefined
  }
}

/** Whether `principal` may make `request`. */
export function authorize(principal: Principal, request: ApiRequest): Decision {
  if (principal.kind !== 'tenant') return ALLOW
  const who = `token "${principal.name}"`
  switch (request.kind) {
    case 'discovery':
      return ALLOW
    case 'internal':
      // The internal surface is not even admitted to exist for tenants.
      return { kind: 'deny', code: 404, message: `the server could not find the requested resource (${request.path})` }
    case 'operator':
      return { kind: 'deny', code: 403, message: `${who} cannot use ${request.path}: it needs an admin token` }
    case 'resource': {
      if (request.clusterWide) {
        return {
          kind: 'deny',
          code: 403,
          message: `${who} cannot ${request.verb} ${request.plural}: they are cluster-wide and need an admin token`
        }
      }
      if (request.namespace === undefined) {
        const namespaces = principal.namespaces
        return { kind: 'allow', visible: namespace => namespaces.has(namespace) }
      }
      if (principal.namespaces.has(request.namespace)) return ALLOW
      return {
        kind: 'deny',
        code: 403,
        message: `${who} cannot ${request.verb} ${request.plural} in namespace "${request.namespace}"`
      }
    }
  }
}

const ALLOW: Decision = Object.freeze({ kind: 'allow' })

function verbOf(method: string, named: boolean): Verb {
  switch (method) {
    case 'GET':
    case 'HEAD':
      return named ? 'get' : 'list'
    case 'POST':
      return 'create'
    case 'PUT':
    case 'PATCH':
      return 'update'
    case 'DELETE':
      return 'delete'
    default:
      return 'other'
  }
}

function safeDecode(part: string): string {
  try {
    return decodeURIComponent(part)
  } catch {
    return part
  }
}
