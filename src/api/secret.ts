import { Ajv } from 'ajv'
import { invalid } from '../errors/index.ts'
import type { FieldError } from '../errors/index.ts'
import { deepFreeze } from '../util/index.ts'
import { fieldErrorsOf } from './schema-errors.ts'
import { serverSet, serverSetMetadata, stringMap } from './schema-parts.ts'
import { checkDns1123Label, checkDns1123Subdomain } from './names.ts'
import type { ObjectMeta } from './types.ts'

/**
 * A Kubernetes `v1` Secret as a client sends it: `data` (base64 values) and `stringData` (plain values) are
 * merged into `data`, as Kubernetes does. Only the API edge ever holds this form: the store keeps the values
 * encrypted (src/secrets), and no answer of the API carries them.
 */
export interface SecretResource {
  readonly apiVersion: 'v1'
  readonly kind: 'Secret'
  readonly metadata: ObjectMeta
  /** Kubernetes' secret type; default `Opaque`. Shoal does not interpret it. */
  readonly type: string
  /** Key → base64 of the value. */
  readonly data: Readonly<Record<string, string>>
}

/** AES-256-GCM ciphertext as the log stores it: which key sealed it, and the nonce, tag and bytes in base64. */
export interface Envelope {
  readonly alg: 'AES-256-GCM'
  readonly kid: string
  readonly iv: string
  readonly tag: string
  readonly data: string
}

/** A Secret's `spec` in the store: its type, its key names, and its values sealed in one envelope (src/secrets). */
export interface SealedSecretSpec {
  readonly type: string
  readonly keys: readonly string[]
  readonly sealed: Envelope
}

/** Kubernetes' rule for a Secret key: `[-._a-zA-Z0-9]+`, at most 253 characters. */
const KEY = /^[-._a-zA-Z0-9]+$/
/** Kubernetes' limit on the values of one Secret. */
export const MAX_SECRET_BYTES = 1024 * 1024

export const secretSchema = deepFreeze({
  type: 'object',
  required: ['apiVersion', 'kind', 'metadata'],
  additionalProperties: false,
  properties: {
    apiVersion: { type: 'string', const: 'v1' },
    kind: { type: 'string', const: 'Secret' },
    metadata: {
      type: 'object',
      required: ['name'],
      additionalProperties: false,
      properties: {
        name: { type: 'string', minLength: 1 },
        namespace: { type: 'string', minLength: 1 },
        labels: stringMap,
        annotations: stringMap,
        ...serverSetMetadata,
        // kubectl-exported manifests carry these; accepted and dropped.
        selfLink: serverSet('string'),
        managedFields: { type: ['array', 'null'] },
        ownerReferences: { type: ['array', 'null'] },
        finalizers: { type: ['array', 'null'] }
      }
    },
    type: { type: 'string', minLength: 1, description: 'Kubernetes secret type; default Opaque.' },
    data: { ...stringMap, description: 'Key → base64 value.' },
    stringData: { ...stringMap, description: 'Key → plain value; merged into data, wins over it.' },
    immutable: { type: 'boolean' },
    // What the API shows instead of the values (see presentSecret): refused with a clear message on apply.
    keys: { description: 'Read-only: the API lists key names here, never values.' }
  }
})

let validate: ReturnType<Ajv['compile']> | undefined

/**
 * Validates a Secret manifest and returns it with `stringData` merged into `data`, deeply frozen. Error
 * messages name fields and keys, never values.
 */
export function validateSecret(input: Record<string, unknown>, defaultNamespace: string): SecretResource {
  validate ??= new Ajv({ allErrors: true, strict: true, allowUnionTypes: true }).compile(secretSchema)
  const fields: FieldError[] = []
  if (!validate(input)) {
    // ajv's own message may quote the value (const, type): say what is wanted without it.
    fields.push(
      ...fieldErrorsOf(validate.errors, e => (e.keyword === 'type' ? `must be ${String(e.params['type'])}` : 'invalid'))
    )
  }
  const metadata = (input['metadata'] ?? {}) as Record<string, unknown>
  const name = metadata['name']
  if (typeof name === 'string') {
    const problem = checkDns1123Subdomain(name)
    if (problem !== undefined) fields.push({ path: 'metadata.name', message: problem })
  }
  if (typeof metadata['namespace'] === 'string') {
    const problem = checkDns1123Label(metadata['namespace'])
    if (problem !== undefined) fields.push({ path: 'metadata.namespace', message: problem })
  }
  if ('keys' in input) {
    fields.push({
      path: 'keys',
      message: 'read-only: the API shows key names, never values; give the values in data or stringData'
    })
  }
  if (input['immutable'] === true) fields.push({ path: 'immutable', message: 'not supported' })
  const merged = new Map<string, Buffer>()
  const data = isStringMap(input['data']) ? input['data'] : {}
  for (const [key, value] of Object.entries(data)) {
    const decoded = decodeBase64(value)
    if (decoded === undefined) fields.push({ path: `data.${key}`, message: 'must be standard base64 (with padding)' })
    else merged.set(key, decoded)
  }
  const stringData = isStringMap(input['stringData']) ? input['stringData'] : {}
  for (const [key, value] of Object.entries(stringData)) merged.set(key, Buffer.from(value, 'utf8'))
  let total = 0
  for (const [key, value] of merged) {
    total += value.length
    if (key.length > 253 || !KEY.test(key)) {
      const where = key in stringData ? 'stringData' : 'data'
      fields.push({ path: `${where}.${key}`, message: 'a key is 1-253 characters of a-z, A-Z, 0-9, "-", "_", "."' })
    }
  }
  if (total > MAX_SECRET_BYTES) {
    fields.push({ path: 'data', message: `the values total ${total} bytes; the limit is ${MAX_SECRET_BYTES}` })
  }
  if (fields.length > 0) throw invalid(typeof name === 'string' ? `Secret ${name}` : 'Secret', fields)
  const labels = metadata['labels'] as Record<string, string> | undefined
  const annotations = metadata['annotations'] as Record<string, string> | undefined
  const namespace = typeof metadata['namespace'] === 'string' ? metadata['namespace'] : defaultNamespace
  const resourceVersion = metadata['resourceVersion']
  return deepFreeze({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: name as string,
      namespace,
      ...(labels === undefined ? {} : { labels: { ...labels } }),
      ...(annotations === undefined ? {} : { annotations: { ...annotations } }),
      ...(typeof resourceVersion === 'string' ? { resourceVersion } : {})
    },
    type: typeof input['type'] === 'string' ? input['type'] : 'Opaque',
    data: Object.fromEntries(
      [...merged].sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, v]) => [k, v.toString('base64')])
    )
  })
}

function isStringMap(value: unknown): value is Record<string, string> {
  return (
    typeof value === 'object' &&
    value !== null &&
    !Array.isArray(value) &&
    Object.values(value).every(v => typeof v === 'string')
  )
}

function decodeBase64(text: string): Buffer | undefined {
  const compact = text.replace(/\s+/g, '')
  if (!/^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(compact)) return undefined
  return Buffer.from(compact, 'base64')
}
