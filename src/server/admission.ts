import type { IncomingMessage } from 'node:http'
import { apiVersionOf, parseManifests, validateObject } from '../api/index.ts'
import type { KindInfo, ShoalResource } from '../api/index.ts'
import type { Principal } from '../auth/index.ts'
import { ErrorCodes, ShoalError, invalid } from '../errors/index.ts'
import { checkSealedSecret, sealSecret } from '../secrets/index.ts'
import type { SecretKey } from '../secrets/index.ts'
import { isKafkaSource } from '../store/index.ts'
import type { WriteOp } from '../store/index.ts'
import { DEFAULT_MAX_BODY_BYTES, readBody } from './read-body.ts'
import type { ServerContext } from './types.ts'

/** Where a write's body goes: a kind, a namespace, and for a replacement the name the path gives. */
export interface AdmissionTarget {
  readonly info: KindInfo
  readonly namespace: string
  readonly name: string | undefined
}

/** Parses and validates a body, and checks it names what the path names and that the caller may write it. */
export async function admit(
  server: ServerContext,
  req: IncomingMessage,
  target: AdmissionTarget,
  principal: Principal
): Promise<ShoalResource> {
  const { info, namespace, name } = target
  checkContentType(req)
  const maxBytes = server.options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES
  const documents = parseManifests(await readBody(req, maxBytes), { maxBytes })
  if (documents.length !== 1) {
    throw new ShoalError(ErrorCodes.MALFORMED, `the request body must hold exactly one object, not ${documents.length}`)
  }
  const body = documents[0]
  if (info.namespaced && typeof body === 'object' && body !== null && !Array.isArray(body)) {
    const metadata = (body as { metadata?: unknown }).metadata
    if (typeof metadata === 'object' && metadata !== null && !('namespace' in metadata)) {
      ;(metadata as Record<string, unknown>).namespace = namespace
    }
  }
  // The version the body was written at: it must be the path's (the object itself is stored at the storage version).
  const sentAt = (body as { apiVersion?: unknown } | null)?.apiVersion
  const object = validateObject(body)
  const fields = mismatches(object, sentAt, target)
  if (fields.length > 0)
    throw new ShoalError(
      ErrorCodes.INVALID,
      `${info.kind} does not match the request: ${fields.map(f => `${f.path}: ${f.message}`).join('; ')}`,
      { fields }
    )
  const guard = server.options.guard
  if (guard?.multiTenant) {
    const stored = name === undefined ? undefined : await server.store.get(`${info.kind}/${namespace}/${name}`)
    const storedGroup = stored && isKafkaSource(stored) ? stored.object.spec.consumerGroup : undefined
    const refused = guard.admissionErrors(principal, object, storedGroup)
    if (refused.length > 0) throw invalid(`${info.kind} ${namespace}/${object.metadata.name}`, refused)
  }
  return object
}

/** Where a valid object disagrees with the path it was sent to. */
function mismatches(object: ShoalResource, sentAt: unknown, { info, namespace, name }: AdmissionTarget) {
  const fields = []
  if (object.kind !== info.kind || sentAt !== apiVersionOf(info)) {
    fields.push({
      path: 'kind',
      message: `the body is a ${String(sentAt)} ${object.kind}, the path names ${apiVersionOf(info)} ${info.kind}`
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
  return fields
}

/**
 * A write another replica forwarded. It was validated there; it is validated again here, because the owner
 * is the one place every write passes and must not trust its callers to have done so.
 */
export function admitForwarded(text: string): WriteOp {
  let op: WriteOp
  try {
    op = (JSON.parse(text) as { op: WriteOp }).op
  } catch {
    throw new ShoalError(ErrorCodes.MALFORMED, 'a forwarded write must be JSON')
  }
  switch (op?.kind) {
    case 'create':
    case 'update': {
      const expected = op.kind === 'update' ? op.expectedVersion : undefined
      // Secrets arrive sealed (the receiving replica sealed them): check their shape, never expect clear values.
      const object =
        (op.object as { kind?: unknown } | undefined)?.kind === 'Secret'
          ? checkSealedSecret(op.object)
          : toNew(validateObject(op.object))
      return { kind: op.kind, object, ...(expected === undefined ? {} : { expectedVersion: String(expected) }) }
    }
    case 'delete':
      if (typeof op.key === 'string' && op.key.split('/').length === 3) return op
      break
    default:
      break
  }
  throw new ShoalError(ErrorCodes.MALFORMED, 'a forwarded write must be a create, update or delete of one resource')
}

/** What the store keeps of a resource: a Secret sealed, the rest without the server-set metadata. */
export function toNew(object: ShoalResource, secretKey?: SecretKey): Extract<WriteOp, { kind: 'create' }>['object'] {
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
