import { Ajv } from 'ajv'
import { invalid } from '../errors/index.ts'
import type { FieldError } from '../errors/index.ts'
import { deepFreeze } from '../util/index.ts'
import { fieldErrorsOf } from './schema-errors.ts'
import { serverSetMetadata, stringMap } from './schema-parts.ts'
import { checkDns1123Subdomain } from './names.ts'
import type { ObjectMeta } from './types.ts'

/** A Dispatcher's desired state. */
export interface DispatcherSpec {
  /** Cordoned: the scheduler places nothing new here and moves what runs here to other dispatchers. */
  readonly unschedulable: boolean
}

/** The desired state of one dispatcher; its live state (zone, capacity, load) comes from its heartbeats. */
export interface DispatcherResource {
  readonly apiVersion: 'shoal.dev/v1alpha1'
  readonly kind: 'Dispatcher'
  readonly metadata: ObjectMeta
  readonly spec: DispatcherSpec
}

export const dispatcherSchema = deepFreeze({
  type: 'object',
  required: ['apiVersion', 'kind', 'metadata'],
  additionalProperties: false,
  properties: {
    apiVersion: { type: 'string' },
    kind: { type: 'string' },
    metadata: {
      type: 'object',
      required: ['name'],
      additionalProperties: false,
      properties: {
        name: { type: 'string', minLength: 1 },
        labels: stringMap,
        annotations: stringMap,
        ...serverSetMetadata
      }
    },
    spec: {
      type: 'object',
      additionalProperties: false,
      properties: { unschedulable: { type: 'boolean', description: 'Cordoned: nothing new is placed here.' } }
    },
    status: { type: 'object', description: 'Live state, set by the server; ignored in a manifest.' }
  }
})

let validate: ReturnType<Ajv['compile']> | undefined

/** Validates a Dispatcher manifest (cluster-wide: no namespace) and returns it defaulted and frozen. */
export function validateDispatcher(given: Record<string, unknown>): DispatcherResource {
  validate ??= new Ajv({ allErrors: true, strict: true, allowUnionTypes: true }).compile(dispatcherSchema)
  // An empty namespace is no namespace (as kubectl reads it): what validation stores, and a replica forwards.
  const input = withoutEmptyNamespace(given)
  const fields: FieldError[] = []
  if (!validate(input)) {
    fields.push(
      ...fieldErrorsOf(
        validate.errors,
        e => e.message ?? 'invalid',
        name => (name === 'namespace' ? 'a Dispatcher is cluster-wide: it has no namespace' : 'unknown field')
      )
    )
  }
  const name = (input['metadata'] as { name?: unknown } | undefined)?.name
  if (typeof name === 'string') {
    const problem = checkDns1123Subdomain(name)
    if (problem !== undefined) fields.push({ path: 'metadata.name', message: problem })
  }
  if (fields.length > 0) throw invalid(typeof name === 'string' ? `Dispatcher ${name}` : 'Dispatcher', fields)
  const working = structuredClone(input) as { metadata: Record<string, unknown>; spec?: Record<string, unknown> }
  delete (working as Record<string, unknown>)['status']
  for (const key of ['uid', 'generation', 'resourceVersion', 'creationTimestamp']) {
    if (working.metadata[key] === null) delete working.metadata[key]
  }
  working.metadata['namespace'] = ''
  working.spec = { unschedulable: working.spec?.['unschedulable'] === true }
  return deepFreeze(working) as unknown as DispatcherResource
}

function withoutEmptyNamespace(input: Record<string, unknown>): Record<string, unknown> {
  const metadata = input['metadata']
  if (typeof metadata !== 'object' || metadata === null || (metadata as { namespace?: unknown }).namespace !== '') {
    return input
  }
  const { namespace: _empty, ...rest } = metadata as Record<string, unknown>
  return { ...input, metadata: rest }
}
