import { resolveDestination } from '../api/index.ts'
import { oidcTokenRef, resolveDeliveryPolicy } from '../delivery/index.ts'
import type { DeliveryTarget, OidcTokenRef } from '../delivery/index.ts'
import type { StoredPingSource } from '../store/index.ts'
import { LATE_POLICY_ANNOTATION } from './late-policy.ts'

/**
 * What firing a PingSource needs, and nothing else of its stored object: a dispatcher keeps one per PingSource
 * it reads (100,000 of them), so the labels, other annotations, the sink reference and the JSON's objects are
 * dropped, and strings that many sources share (namespace, schedule, time zone, content type) are interned.
 */
export interface PingRecord {
  /** The resourceVersion it was read at (the record's offset in its bucket). */
  readonly offset: number
  readonly namespace: string
  readonly name: string
  readonly uid: string
  readonly creationMs: number
  readonly schedule: string
  readonly timezone?: string
  /** The raw `shoal.dev/late-ticks` annotation, when set. */
  readonly latePolicy?: string
  readonly contentType?: string
  readonly data?: string
  readonly dataBase64?: string
  readonly extensions?: Readonly<Record<string, string>>
  /** spec.sink resolved to its URI (and CA certificates), or why it does not resolve. */
  readonly sink: PingSink | { readonly unresolved: string }
}

export interface PingSink {
  readonly uri: string
  readonly caCerts?: string
  readonly oidc?: OidcTokenRef
}

/** Returns one instance per distinct string: sources that share a value share its memory. */
export class StringPool {
  readonly #strings = new Map<string, string>()
  readonly #limit: number

  /** Past `limit` distinct strings it starts over (a flood of distinct values only costs the copies). */
  constructor(limit = 65_536) {
    this.#limit = limit
  }

  intern(value: string): string
  intern(value: string | undefined): string | undefined
  intern(value: string | undefined): string | undefined {
    if (value === undefined) return undefined
    const known = this.#strings.get(value)
    if (known !== undefined) return known
    if (this.#strings.size >= this.#limit) this.#strings.clear()
    this.#strings.set(value, value)
    return value
  }

  get size(): number {
    return this.#strings.size
  }
}

export interface PingRecordOptions {
  readonly serviceUrlTemplate: string
  readonly strings: StringPool
}

/** The PingRecord of a stored PingSource read at `offset`. */
export function pingRecordOf(object: StoredPingSource, offset: number, options: PingRecordOptions): PingRecord {
  const { strings } = options
  const spec = object.spec
  const resolved = resolveDestination(spec.sink, object.metadata.namespace, {
    serviceUrlTemplate: options.serviceUrlTemplate
  })
  const caCerts = spec.sink.CACerts
  const oidc = oidcTokenRef(object.metadata, 'sink')
  const extensions = spec.ceOverrides?.extensions
  const late = object.metadata.annotations?.[LATE_POLICY_ANNOTATION]
  return {
    offset,
    namespace: strings.intern(object.metadata.namespace),
    name: object.metadata.name,
    uid: object.metadata.uid,
    creationMs: Date.parse(object.metadata.creationTimestamp),
    schedule: strings.intern(spec.schedule),
    ...(spec.timezone === undefined ? {} : { timezone: strings.intern(spec.timezone) }),
    ...(late === undefined ? {} : { latePolicy: strings.intern(late) }),
    ...(spec.contentType === undefined ? {} : { contentType: strings.intern(spec.contentType) }),
    ...(spec.data === undefined ? {} : { data: spec.data }),
    ...(spec.dataBase64 === undefined ? {} : { dataBase64: spec.dataBase64 }),
    ...(extensions === undefined || Object.keys(extensions).length === 0 ? {} : { extensions }),
    sink:
      resolved.kind === 'unresolved'
        ? { unresolved: resolved.message }
        : Object.freeze({
            uri: resolved.uri,
            ...(caCerts === undefined ? {} : { caCerts }),
            ...(oidc === undefined ? {} : { oidc })
          })
  }
}

// A PingSource has no delivery spec (Knative's has none either): Shoal's delivery defaults apply, one object
// for all of them.
const PING_DELIVERY_POLICY = resolveDeliveryPolicy(undefined)

/**
 * Where the ticks of `key` (`PingSource/<namespace>/<name>`) go: its resolved sink under Shoal's delivery defaults,
 * each request with the header `Kn-Namespace: <namespace>`, as Knative's PingSource adapter sends it (a sink or an
 * event policy can tell which namespace an event comes from).
 */
export function pingTargetOf(key: string, sink: PingSink): DeliveryTarget {
  const namespace = key.split('/')[1] ?? ''
  let headers = NAMESPACE_HEADERS.get(namespace)
  if (headers === undefined) NAMESPACE_HEADERS.set(namespace, (headers = Object.freeze({ 'kn-namespace': namespace })))
  return Object.freeze({ sourceKey: key, sink: { ...sink, headers }, policy: PING_DELIVERY_POLICY })
}

// One headers object per namespace, shared by its schedules (a dispatcher may run 100,000).
const NAMESPACE_HEADERS = new Map<string, Readonly<Record<string, string>>>()
