import { apiVersionOf, kindByPath, kinds, matchesSelector, parseSelector } from '../api/index.ts'
import type { KindInfo } from '../api/index.ts'
import { ErrorCodes, ShoalError, isShoalError } from '../errors/index.ts'
import type { StoredEntry, WriteOp } from '../store/index.ts'
import { admit, toNew } from './admission.ts'
import { sendJson } from './respond.ts'
import { failure, pathNotFound, statusOf, success } from './status.ts'
import type { StatusBody } from './status.ts'
import type { ApiRequest, Handler, ServerContext } from './types.ts'
import { executeWrite } from './writes.ts'

/** What a resource path names: every object of a kind (in a namespace, or in all), one object, or nothing served. */
export type ResourceTarget =
  | { readonly kind: 'collection'; readonly info: KindInfo; readonly namespace: string | undefined }
  | { readonly kind: 'object'; readonly info: KindInfo; readonly namespace: string; readonly name: string }
  | { readonly kind: 'refused'; readonly status: StatusBody }

/** Reads a resource route's params (group, version, plural, and maybe namespace and name). Pure. */
export function resourceTarget(path: string, params: Readonly<Record<string, string>>): ResourceTarget {
  const { group = '', version = '', plural = '', name } = params
  const info = kindByPath(group, version, plural)
  if (!info) {
    const served = kinds.map(k => `${apiVersionOf(k)} ${k.plural}`).join(', ')
    const message = `the server could not find the requested resource: ${group}/${version} ${plural}; it serves ${served}`
    return { kind: 'refused', status: failure(404, 'NotFound', message) }
  }
  // Cluster-wide kinds (Dispatcher) have no namespace in their paths; namespaced ones need it for one object.
  let namespace = params['namespace']
  if (!info.namespaced) {
    if (namespace !== undefined) {
      const message = `${info.plural} are cluster-wide: use ${path.replace(/\/namespaces\/[^/]+/, '')}`
      return { kind: 'refused', status: failure(404, 'NotFound', message) }
    }
    namespace = ''
  }
  if (name === undefined) return { kind: 'collection', info, namespace }
  if (namespace === undefined) return { kind: 'refused', status: pathNotFound(path) }
  return { kind: 'object', info, namespace, name }
}

/**
 * An entry as the client sees it at the version its path names: every served version of a kind shares one schema,
 * so the object is the same and only its apiVersion says which was asked for (what a conversion webhook does).
 */
function presentAt(server: ServerContext, info: KindInfo, entry: StoredEntry): unknown {
  const shown = server.present(entry)
  if (typeof shown !== 'object' || shown === null || info.version === info.versions[0]) return shown
  return { ...shown, apiVersion: apiVersionOf(info) }
}

/** Every resource path: lists and creates on a collection, reads, replaces and deletes on one object. */
export const resources: Handler = async (server, request) => {
  const target = resourceTarget(request.path, request.params)
  if (target.kind === 'refused') return server.send(request.res, target.status)
  if (target.kind === 'collection') return collection(server, request, target.info, target.namespace)
  return object(server, request, target)
}

async function collection(
  server: ServerContext,
  request: ApiRequest,
  info: KindInfo,
  namespace: string | undefined
): Promise<void> {
  const { method, res } = request
  if (method === 'GET') return list(server, request, info, info.namespaced ? namespace : undefined)
  if (method === 'POST' && namespace !== undefined) {
    const object = await admit(server, request.req, { info, namespace, name: undefined }, request.principal)
    const result = await executeWrite(
      server,
      { kind: 'create', object: toNew(object, server.options.secretKey) },
      request.req
    )
    return sendJson(res, 201, presentAt(server, info, result.entry))
  }
  server.send(res, failure(405, 'MethodNotAllowed', `${method} is not allowed on ${request.path}`))
}

async function list(
  server: ServerContext,
  { res, query, visible }: ApiRequest,
  info: KindInfo,
  namespace: string | undefined
): Promise<void> {
  const selector = parseSelector(query.get('labelSelector') ?? '')
  if (!selector.ok) return server.send(res, failure(400, 'BadRequest', `labelSelector: ${selector.message}`))
  const prefix = namespace === undefined ? `${info.kind}/` : `${info.kind}/${namespace}/`
  // A list across namespaces shows a tenant only its own namespaces' objects.
  const inScope = (key: string) => visible === undefined || visible(key.split('/')[1] ?? '')
  const entries = await server.store.list(key => key.startsWith(prefix) && inScope(key))
  const items = [
    ...entries.map(e => presentAt(server, info, e)),
    ...(server.options.liveObjects?.(info, new Set(entries.map(e => e.object.metadata.name))) ?? [])
  ].filter(o => matchesSelector(selector.requirements, labelsOf(o)))
  sendJson(res, 200, { apiVersion: apiVersionOf(info), kind: `${info.kind}List`, metadata: {}, items })
}

async function object(
  server: ServerContext,
  request: ApiRequest,
  { info, namespace, name }: Extract<ResourceTarget, { kind: 'object' }>
): Promise<void> {
  const { method, req, res } = request
  const key = `${info.kind}/${namespace}/${name}`
  const target = { kind: info.plural, name }
  try {
    if (method === 'GET') {
      const entry = await server.store.get(key)
      const presented = entry ? presentAt(server, info, entry) : server.options.liveObject?.(info, name)
      if (!presented) throw new ShoalError(ErrorCodes.NOT_FOUND, `${info.plural}.${info.group} "${name}" not found`)
      return sendJson(res, 200, presented)
    }
    if (method === 'PUT') {
      const object = await admit(server, req, { info, namespace, name }, request.principal)
      const expected = object.metadata.resourceVersion
      const op: WriteOp = {
        kind: 'update',
        object: toNew(object, server.options.secretKey),
        ...(expected ? { expectedVersion: expected } : {})
      }
      return sendJson(res, 200, presentAt(server, info, (await executeWrite(server, op, req)).entry))
    }
    if (method === 'DELETE') {
      const expected = request.query.get('resourceVersion') ?? undefined
      const op: WriteOp = { kind: 'delete', key, ...(expected ? { expectedVersion: expected } : {}) }
      await executeWrite(server, op, req)
      return sendJson(res, 200, success(`${info.plural}.${info.group} "${name}" deleted`, target))
    }
    return server.send(res, failure(405, 'MethodNotAllowed', `${method} is not allowed on ${request.path}`))
  } catch (error) {
    if (isShoalError(error, ErrorCodes.NOT_FOUND)) {
      return server.send(res, failure(404, 'NotFound', `${info.plural}.${info.group} "${name}" not found`, target))
    }
    return server.send(res, statusOf(error, target))
  }
}

function labelsOf(object: unknown): Record<string, string> {
  return (object as { metadata?: { labels?: Record<string, string> } }).metadata?.labels ?? {}
}
