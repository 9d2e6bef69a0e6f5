import { isDeepStrictEqual } from 'node:util'
import type { Condition, KindInfo } from '../api/index.ts'

/** A JSON object as it comes off the wire or out of a manifest; read through the accessors below. */
export type JsonObject = { [key: string]: unknown }

export function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** The value at a dotted path of plain objects, or undefined. */
export function field(value: unknown, ...path: readonly string[]): unknown {
  let current = value
  for (const key of path) {
    if (!isObject(current)) return undefined
    current = current[key]
  }
  return current
}

function stringAt(value: unknown, ...path: readonly string[]): string | undefined {
  const found = field(value, ...path)
  return typeof found === 'string' ? found : undefined
}

export function nameOf(object: unknown): string | undefined {
  return stringAt(object, 'metadata', 'name')
}

export function namespaceOf(object: unknown): string | undefined {
  return stringAt(object, 'metadata', 'namespace')
}

export function creationTimestampOf(object: unknown): string | undefined {
  return stringAt(object, 'metadata', 'creationTimestamp')
}

export function resourceVersionOf(object: unknown): string | undefined {
  return stringAt(object, 'metadata', 'resourceVersion')
}

/** `metadata.labels` or `metadata.annotations` as a string map (non-string values are dropped). */
export function stringMap(object: unknown, key: 'labels' | 'annotations'): Readonly<Record<string, string>> {
  const found = field(object, 'metadata', key)
  const out: Record<string, string> = {}
  if (isObject(found)) {
    for (const [k, v] of Object.entries(found)) if (typeof v === 'string') out[k] = v
  }
  return out
}

/**
 * One entry of `status.conditions` as read off the wire: the API's Condition, its status as given and its time
 * possibly absent, since the CLI shows what a server answers rather than trusting it.
 */
export type ShownCondition = Omit<Condition, 'status' | 'lastTransitionTime'> & {
  readonly status: string
  readonly lastTransitionTime?: string
}

export function conditionsOf(object: unknown): ShownCondition[] {
  const found = field(object, 'status', 'conditions')
  if (!Array.isArray(found)) return []
  return found.filter(isObject).map(c => ({
    type: typeof c['type'] === 'string' ? c['type'] : '',
    status: typeof c['status'] === 'string' ? c['status'] : '',
    ...(typeof c['reason'] === 'string' ? { reason: c['reason'] } : {}),
    ...(typeof c['message'] === 'string' ? { message: c['message'] } : {}),
    ...(typeof c['lastTransitionTime'] === 'string' ? { lastTransitionTime: c['lastTransitionTime'] } : {})
  }))
}

export function conditionOf(object: unknown, type: string): ShownCondition | undefined {
  return conditionsOf(object).find(c => c.type === type)
}

/** `kafkasource.sources.knative.dev`: how kubectl names a kind in `created`/`deleted` lines and `-o name`. */
export function qualifiedKind(info: KindInfo): string {
  return info.group === '' ? info.singular : `${info.singular}.${info.group}`
}

/** `kafkasources.sources.knative.dev`: the resource as Kubernetes names it in its messages. */
export function qualifiedPlural(info: KindInfo): string {
  return info.group === '' ? info.plural : `${info.plural}.${info.group}`
}

/** `kafkasource.sources.knative.dev/my-source`. */
export function objectReference(info: KindInfo, name: string): string {
  return `${qualifiedKind(info)}/${name}`
}

const serverSetMetadata = [
  'uid',
  'resourceVersion',
  'generation',
  'creationTimestamp',
  'deletionTimestamp',
  'managedFields',
  'selfLink'
] as const

/**
 * The body `apply` sends for a manifest: the manifest without status and without the metadata the server
 * sets, so the output of `shoal get -o yaml` can be applied back unchanged — except `resourceVersion`, which
 * `apply` keeps as its precondition (an object changed since it was read is a conflict, as with kubectl).
 */
export function desiredStateOf(manifest: JsonObject, namespace: string): JsonObject {
  const { status: _status, ...rest } = manifest
  const metadata: JsonObject = isObject(manifest['metadata']) ? { ...manifest['metadata'] } : {}
  for (const key of serverSetMetadata) if (key !== 'resourceVersion') delete metadata[key]
  metadata['namespace'] = namespace
  return { ...rest, metadata }
}

/** Whether two objects agree on what a user applies: spec, labels and annotations (absent = empty). */
export function sameDesiredState(a: unknown, b: unknown): boolean {
  return (
    isDeepStrictEqual(field(a, 'spec') ?? {}, field(b, 'spec') ?? {}) &&
    isDeepStrictEqual(stringMap(a, 'labels'), stringMap(b, 'labels')) &&
    isDeepStrictEqual(stringMap(a, 'annotations'), stringMap(b, 'annotations'))
  )
}

/** Orders objects as kubectl lists them: by namespace, then name. */
export function byNamespaceAndName(a: unknown, b: unknown): number {
  return compare(namespaceOf(a) ?? '', namespaceOf(b) ?? '') || compare(nameOf(a) ?? '', nameOf(b) ?? '')
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}
