import { once } from 'node:events'
import { createServer } from 'node:http'
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { isDeepStrictEqual } from 'node:util'
import { apiVersionOf, kindByPath, matchesSelector, parseSelector } from '../../src/api/index.ts'
import type { KindInfo } from '../../src/api/index.ts'

type Obj = Record<string, unknown> & { metadata: Record<string, unknown>; spec?: unknown }

/** A request the fake saw, for assertions. */
export interface SeenRequest {
  readonly method: string
  readonly path: string
  readonly body: unknown
}

/** Lets a test answer a request itself (to inject a fault); return true when it did. */
export type Interceptor = (request: SeenRequest, response: ServerResponse) => boolean

/**
 * Just enough of the Shoal REST contract for the CLI's tests: CRUD by the documented paths, Status errors,
 * compare-and-set on resourceVersion, equality label selectors, a default (`spec.consumers: 1` on
 * KafkaSource) and one validation rule (`spec.sink` is required). The real server is tested elsewhere.
 */
export class FakeApi {
  readonly objects = new Map<string, Obj>()
  readonly requests: SeenRequest[] = []
  interceptor: Interceptor | undefined
  #resourceVersion = 100
  readonly #server = createServer((req, res) => {
    void this.#handle(req, res)
  })

  url = ''

  static async start(): Promise<FakeApi> {
    const api = new FakeApi()
    api.#server.listen(0, '127.0.0.1')
    await once(api.#server, 'listening')
    api.url = `http://127.0.0.1:${(api.#server.address() as AddressInfo).port}`
    return api
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections()
    this.#server.close()
    await once(this.#server, 'close')
  }

  /** Puts an object in the store as the server would have it after a create. */
  seed(object: Record<string, unknown>): void {
    const metadata = object['metadata'] as Record<string, unknown>
    const key = `${String(object['kind'])}/${String(metadata['namespace'])}/${String(metadata['name'])}`
    this.objects.set(key, structuredClone(object) as Obj)
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = []
    for await (const chunk of req) chunks.push(chunk as Buffer)
    const text = Buffer.concat(chunks).toString('utf8')
    const url = new URL(req.url ?? '/', 'http://x')
    const request: SeenRequest = {
      method: req.method ?? 'GET',
      path: url.pathname + url.search,
      body: text === '' ? undefined : JSON.parse(text)
    }
    this.requests.push(request)
    if (this.interceptor?.(request, res) === true) return
    if (url.pathname === '/openapi.json')
      return send(res, 200, { openapi: '3.0.3', info: { title: 'Shoal', version: '9.9.9' } })

    const match = /^\/apis\/([^/]+)\/([^/]+)\/(?:namespaces\/([^/]+)\/)?([^/]+)(?:\/([^/]+))?$/.exec(url.pathname)
    const kind = match === null ? undefined : kindByPath(match[1] ?? '', match[2] ?? '', match[4] ?? '')
    if (match === null || kind === undefined)
      return failure(res, 404, 'NotFound', `the server could not find the requested resource`)
    const namespace = match[3] === undefined ? undefined : decodeURIComponent(match[3])
    const name = match[5] === undefined ? undefined : decodeURIComponent(match[5])
    const key = `${kind.kind}/${namespace ?? ''}/${name ?? ''}`
    const notFound = (): void => failure(res, 404, 'NotFound', `${kind.plural}.${kind.group} "${name ?? ''}" not found`)

    if (name === undefined && req.method === 'GET') {
      const selector = url.searchParams.get('labelSelector') ?? ''
      const items = [...this.objects.values()].filter(
        o =>
          o['kind'] === kind.kind &&
          (namespace === undefined || o.metadata['namespace'] === namespace) &&
          matches(selector, o)
      )
      return send(res, 200, { apiVersion: 'v1', kind: `${kind.kind}List`, items })
    }
    if (name === undefined && req.method === 'POST' && namespace !== undefined) {
      const body = request.body as Obj
      const bodyName = String(body.metadata['name'])
      const invalid = validate(kind, namespace, bodyName, body)
      if (invalid !== undefined) return void send(res, 422, invalid)
      const newKey = `${kind.kind}/${namespace}/${bodyName}`
      if (this.objects.has(newKey))
        return failure(res, 409, 'AlreadyExists', `${kind.plural}.${kind.group} "${bodyName}" already exists`)
      const object: Obj = {
        apiVersion: apiVersionOf(kind),
        kind: kind.kind,
        metadata: {
          ...body.metadata,
          namespace,
          uid: `uid-${bodyName}`,
          generation: 1,
          resourceVersion: String(++this.#resourceVersion),
          creationTimestamp: new Date().toISOString()
        },
        spec: withDefaults(kind, body.spec),
        status: {
          observedGeneration: 0,
          conditions: [{ type: 'Ready', status: 'Unknown', lastTransitionTime: new Date().toISOString() }]
        }
      }
      this.objects.set(newKey, object)
      return send(res, 201, object)
    }
    const live = this.objects.get(key)
    if (req.method === 'GET') return live === undefined ? notFound() : send(res, 200, live)
    if (req.method === 'DELETE') {
      if (live === undefined) return notFound()
      this.objects.delete(key)
      return send(res, 200, {
        kind: 'Status',
        apiVersion: 'v1',
        status: 'Success',
        details: { name, kind: kind.plural }
      })
    }
    if (req.method === 'PUT' && namespace !== undefined && name !== undefined) {
      if (live === undefined) return notFound()
      const body = request.body as Obj
      const invalid = validate(kind, namespace, name, body)
      if (invalid !== undefined) return void send(res, 422, invalid)
      const precondition = body.metadata['resourceVersion']
      if (precondition !== undefined && precondition !== live.metadata['resourceVersion']) {
        return failure(
          res,
          409,
          'Conflict',
          `Operation cannot be fulfilled on ${kind.plural}.${kind.group} "${name}": the object has been modified`
        )
      }
      const spec = withDefaults(kind, body.spec)
      const changed =
        !isDeepStrictEqual(spec, live.spec) ||
        !isDeepStrictEqual(body.metadata['labels'], live.metadata['labels']) ||
        !isDeepStrictEqual(body.metadata['annotations'], live.metadata['annotations'])
      const updated: Obj = {
        ...live,
        metadata: {
          ...live.metadata,
          labels: body.metadata['labels'],
          annotations: body.metadata['annotations'],
          generation: Number(live.metadata['generation']) + (isDeepStrictEqual(spec, live.spec) ? 0 : 1),
          resourceVersion: changed ? String(++this.#resourceVersion) : live.metadata['resourceVersion']
        },
        spec
      }
      this.objects.set(key, updated)
      return send(res, 200, updated)
    }
    return failure(res, 405, 'MethodNotAllowed', 'method not allowed')
  }
}

function withDefaults(kind: KindInfo, spec: unknown): unknown {
  if (kind.kind !== 'KafkaSource' || typeof spec !== 'object' || spec === null) return spec
  return { consumers: 1, ...spec }
}

function validate(kind: KindInfo, namespace: string, name: string, body: Obj): Record<string, unknown> | undefined {
  const spec = body.spec as Record<string, unknown> | undefined
  const causes: { field: string; message: string; reason: string }[] = []
  if (spec?.['sink'] === undefined)
    causes.push({ field: 'spec.sink', message: 'required', reason: 'FieldValueRequired' })
  if (kind.kind === 'KafkaSource' && !Array.isArray(spec?.['topics'])) {
    causes.push({ field: 'spec.topics', message: 'required', reason: 'FieldValueRequired' })
  }
  if (causes.length === 0) return undefined
  return {
    kind: 'Status',
    apiVersion: 'v1',
    status: 'Failure',
    reason: 'Invalid',
    code: 422,
    message: `${kind.kind} ${namespace}/${name} is invalid: ${causes.map(c => `${c.field}: ${c.message}`).join('; ')}`,
    details: { name, kind: kind.plural, causes }
  }
}

/** The server's selector semantics: the whole kubectl grammar. */
function matches(selector: string, object: Obj): boolean {
  const parsed = parseSelector(selector)
  if (!parsed.ok) return false
  return matchesSelector(parsed.requirements, (object.metadata['labels'] ?? {}) as Record<string, string>)
}

function send(res: ServerResponse, code: number, body: unknown): void {
  res.writeHead(code, { 'content-type': 'application/json' })
  res.end(JSON.stringify(body))
}

export function failure(res: ServerResponse, code: number, reason: string, message: string): void {
  send(res, code, { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason, code, message })
}
