import { Ajv } from 'ajv'
import type { ErrorObject, ValidateFunction } from 'ajv'
import { ErrorCodes, ShoalError, invalid } from '../errors/index.ts'
import type { FieldError } from '../errors/index.ts'
import { formatPath } from './field-path.ts'
import type { PathSegment } from './field-path.ts'
import { SPEC_DEFAULTS } from './defaults.ts'
import { deepFreeze } from '../util/index.ts'
import { KafkaSourceKind, PingSourceKind, servedApiVersions, storageApiVersionOf } from './kinds.ts'
import { kafkaSourceSchema, pingSourceSchema } from './schemas.ts'
import { isRecord, semanticErrors } from './semantic-checks.ts'
import type { PathError } from './semantic-checks.ts'
import type { SourceResource } from './types.ts'

/** The namespace of a manifest that names none. */
export const DEFAULT_NAMESPACE = 'default'

const MAX_DEPTH = 64

// Metadata that kubectl-exported manifests carry and that means nothing to Shoal: accepted, then dropped.
const IGNORED_METADATA = [
  'selfLink',
  'finalizers',
  'ownerReferences',
  'managedFields',
  'deletionTimestamp',
  'deletionGracePeriodSeconds'
] as const
const SERVER_SET_METADATA = ['uid', 'generation', 'resourceVersion', 'creationTimestamp'] as const

// Unknown fields that are Knative's, or Kubernetes', but that Shoal does not support: say so.
const UNSUPPORTED_HINTS: Readonly<Record<string, string>> = {
  format: 'not supported: Shoal always delivers events in binary content mode',
  audience:
    "not supported here: OIDC tokens for a sink's audience come from the Kubernetes TokenRequest API, so only a source applied through Kubernetes to Shoal's operator (`shoal controller --kubernetes`) may name an audience",
  group: 'not supported: give apiVersion instead',
  address: 'not supported: Shoal resolves a ref to a Service by its name',
  generateName: 'not supported: give metadata.name',
  tokenProvider:
    "not supported: Knative's v1 KafkaSource takes it for AWS MSK IAM authentication, which Shoal does not implement",
  roleARN:
    "not supported: Knative's v1 KafkaSource takes it for AWS MSK IAM authentication, which Shoal does not implement"
}

type SourceKind = SourceResource['kind']

const served = [KafkaSourceKind, PingSourceKind]

let validators: Map<SourceKind, ValidateFunction> | undefined

function validatorFor(kind: SourceKind): ValidateFunction {
  if (validators === undefined) {
    const ajv = new Ajv({ allErrors: true, strict: true, allowUnionTypes: true })
    validators = new Map<SourceKind, ValidateFunction>([
      ['KafkaSource', ajv.compile(kafkaSourceSchema)],
      ['PingSource', ajv.compile(pingSourceSchema)]
    ])
  }
  return validators.get(kind) as ValidateFunction
}

/**
 * Validates a manifest, applies the defaults and returns it deeply frozen, at its kind's storage version (a
 * KafkaSource sent as `sources.knative.dev/v1` comes back as v1beta1: the versions share one schema). Throws
 * SHOAL_UNKNOWN_KIND for an apiVersion/kind Shoal does not serve, and one SHOAL_INVALID naming every offending field
 * otherwise.
 */
export function validateResource(input: unknown): SourceResource {
  const notJson = findNonJson(input, [], 0)
  if (notJson !== undefined) throw invalid('manifest', [toFieldError(notJson)])
  if (!isRecord(input)) throw invalid('manifest', [{ path: '(root)', message: 'must be an object (a resource)' }])
  const kind = checkTypeMeta(input)
  const working = withExtensionScalarsAsStrings(withoutNegativeZero(structuredClone(input)) as Record<string, unknown>)
  working['apiVersion'] = storageApiVersionOf(kind === 'KafkaSource' ? KafkaSourceKind : PingSourceKind)
  const what = describe(kind, working)
  const errors = dedupe([...schemaErrors(validatorFor(kind), working), ...semanticErrors(kind, working)])
  if (errors.length > 0) throw invalid(what, errors)
  // The schema and the semantic checks have established the shape: this is where unknown becomes typed.
  return deepFreeze(applyDefaults(working) as unknown as SourceResource)
}

/** JSON has no -0 (it writes 0): normalise it, so a resource reads back from the log exactly as it was validated. */
function withoutNegativeZero(value: unknown): unknown {
  if (Object.is(value, -0)) return 0
  if (Array.isArray(value)) return value.map(withoutNegativeZero)
  if (isRecord(value)) {
    for (const [key, child] of Object.entries(value)) value[key] = withoutNegativeZero(child)
  }
  return value
}

/**
 * CloudEvents extension values may be integers and booleans, and Knative's own ceOverrides example writes
 * `additional: 42` unquoted: such scalars are taken as their string form, so that example applies unchanged.
 */
function withExtensionScalarsAsStrings(input: Record<string, unknown>): Record<string, unknown> {
  const spec = input['spec']
  const overrides = isRecord(spec) ? spec['ceOverrides'] : undefined
  const extensions = isRecord(overrides) ? overrides['extensions'] : undefined
  if (isRecord(extensions)) {
    for (const [name, value] of Object.entries(extensions)) {
      if (typeof value === 'number' || typeof value === 'boolean') extensions[name] = String(value)
    }
  }
  return input
}

function checkTypeMeta(input: Record<string, unknown>): SourceKind {
  const { apiVersion, kind } = input
  const fields: FieldError[] = []
  if (typeof apiVersion !== 'string') {
    fields.push({ path: 'apiVersion', message: apiVersion === undefined ? 'required' : 'must be a string' })
  }
  if (typeof kind !== 'string')
    fields.push({ path: 'kind', message: kind === undefined ? 'required' : 'must be a string' })
  if (typeof apiVersion !== 'string' || typeof kind !== 'string') throw invalid('manifest', fields)
  const match = served.find(k => k.kind === kind && servedApiVersions(k).includes(apiVersion))
  if (match !== undefined) return match.kind as SourceKind
  const list = served.map(k => `${k.kind} (${servedApiVersions(k).join(', ')})`).join(' and ')
  const sameKind = served.find(k => k.kind === kind)
  const message =
    sameKind === undefined
      ? `kind ${kind} (${apiVersion}) is not served; Shoal serves ${list}`
      : `${kind} is served as ${servedApiVersions(sameKind).join(' or ')}, not ${apiVersion}; Shoal serves ${list}`
  const path = sameKind === undefined ? 'kind' : 'apiVersion'
  throw new ShoalError(ErrorCodes.UNKNOWN_KIND, message, { fields: [{ path, message }] })
}

function describe(kind: SourceKind, input: Record<string, unknown>): string {
  const metadata = isRecord(input['metadata']) ? input['metadata'] : {}
  const name = typeof metadata['name'] === 'string' ? metadata['name'] : undefined
  const namespace = typeof metadata['namespace'] === 'string' ? metadata['namespace'] : DEFAULT_NAMESPACE
  return name === undefined ? kind : `${kind} ${namespace}/${name}`
}

function schemaErrors(validate: ValidateFunction, input: Record<string, unknown>): PathError[] {
  if (validate(input)) return []
  return (validate.errors ?? []).flatMap(error => convert(error, input))
}

function convert(error: ErrorObject, input: unknown): PathError[] {
  const path = pointerToPath(error.instancePath, input)
  const params = error.params as Record<string, unknown>
  switch (error.keyword) {
    case 'required':
      return [{ path: [...path, String(params['missingProperty'])], message: 'required' }]
    case 'additionalProperties': {
      const field = String(params['additionalProperty'])
      return [{ path: [...path, field], message: UNSUPPORTED_HINTS[field] ?? 'unknown field' }]
    }
    case 'type': {
      const types = String(params['type']).split(',')
      const value = valueAt(input, path)
      const quote =
        types.includes('string') && (typeof value === 'number' || typeof value === 'boolean')
          ? ` (in YAML, quote it: "${String(value)}")`
          : ''
      return [{ path, message: `must be ${types.map(withArticle).join(' or ')}${quote}` }]
    }
    case 'enum':
      return [{ path, message: `must be one of: ${(params['allowedValues'] as unknown[]).join(', ')}` }]
    case 'const':
      return [{ path, message: `must be ${String(params['allowedValue'])}` }]
    case 'minItems':
      return [{ path, message: 'must not be empty' }]
    case 'minLength':
      return [{ path, message: 'must not be empty' }]
    case 'maxLength':
      return [{ path, message: `must be at most ${String(params['limit'])} characters` }]
    case 'minimum':
      return [{ path, message: `must be at least ${String(params['limit'])}` }]
    case 'maximum':
      return [{ path, message: `must be at most ${String(params['limit'])}` }]
    default:
      return [{ path, message: error.message ?? 'invalid' }]
  }
}

function withArticle(type: string): string {
  if (type === 'null') return 'null'
  return /^[aeiou]/.test(type) ? `an ${type}` : `a ${type}`
}

/** A JSON pointer as path segments; indexes into arrays become numbers. */
function pointerToPath(pointer: string, input: unknown): PathSegment[] {
  if (pointer === '') return []
  const path: PathSegment[] = []
  let node: unknown = input
  for (const raw of pointer.slice(1).split('/')) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~')
    if (Array.isArray(node)) {
      path.push(Number(key))
      node = node[Number(key)]
    } else {
      path.push(key)
      node = isRecord(node) ? node[key] : undefined
    }
  }
  return path
}

function valueAt(input: unknown, path: readonly PathSegment[]): unknown {
  let node = input
  for (const segment of path) {
    if (Array.isArray(node) && typeof segment === 'number') node = node[segment]
    else if (isRecord(node) && typeof segment === 'string') node = node[segment]
    else return undefined
  }
  return node
}

function dedupe(errors: readonly PathError[]): FieldError[] {
  const byPath = new Map<string, string>()
  for (const error of errors) {
    const path = formatPath(error.path)
    if (!byPath.has(path)) byPath.set(path, error.message)
  }
  return [...byPath].map(([path, message]) => ({ path, message }))
}

function toFieldError(error: PathError): FieldError {
  return { path: formatPath(error.path), message: error.message }
}

/** The first value that JSON cannot hold (a function, a Date, NaN, a cycle…), or undefined. */
function findNonJson(value: unknown, path: PathSegment[], depth: number): PathError | undefined {
  if (depth > MAX_DEPTH) return { path, message: `nested more than ${MAX_DEPTH} levels deep` }
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return undefined
  if (typeof value === 'number')
    return Number.isFinite(value) ? undefined : { path, message: 'must be a finite number' }
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = findNonJson(value[i], [...path, i], depth + 1)
      if (found !== undefined) return found
    }
    return undefined
  }
  if (typeof value === 'object') {
    const proto: unknown = Object.getPrototypeOf(value)
    if (proto !== Object.prototype && proto !== null) return { path, message: 'must be JSON data' }
    for (const [key, child] of Object.entries(value)) {
      const found = findNonJson(child, [...path, key], depth + 1)
      if (found !== undefined) return found
    }
    return undefined
  }
  return { path, message: 'must be JSON data' }
}

type Mutable = Record<string, unknown>

/** The defaults, all in one place. `resource` has passed validation. */
function applyDefaults(resource: Mutable): Mutable {
  delete resource['status']
  const metadata = resource['metadata'] as Mutable
  for (const field of IGNORED_METADATA) delete metadata[field]
  for (const field of SERVER_SET_METADATA) if (metadata[field] === null) delete metadata[field]
  metadata['namespace'] ??= DEFAULT_NAMESPACE
  const namespace = metadata['namespace'] as string
  const spec = resource['spec'] as Mutable
  for (const [field, value] of Object.entries(SPEC_DEFAULTS[resource['kind'] as string] ?? {})) spec[field] ??= value
  if (resource['kind'] === 'KafkaSource') {
    spec['bootstrapServers'] = (spec['bootstrapServers'] as string[]).flatMap(s => s.split(',').map(p => p.trim()))
    const delivery = spec['delivery'] as Mutable | undefined
    if (delivery?.['deadLetterSink'] !== undefined) defaultDestination(delivery['deadLetterSink'] as Mutable, namespace)
  }
  defaultDestination(spec['sink'] as Mutable, namespace)
  return resource
}

function defaultDestination(destination: Mutable, namespace: string): void {
  const ref = destination['ref'] as Mutable | undefined
  if (ref !== undefined) ref['namespace'] ??= namespace
}
