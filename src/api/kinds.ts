/** What the API serves: one entry per resource kind, with the names kubectl users type for it. */
export interface KindInfo {
  readonly group: string
  readonly version: string
  readonly kind: string
  readonly plural: string
  readonly singular: string
  readonly shortNames: readonly string[]
}

export const KafkaSourceKind: KindInfo = Object.freeze({
  group: 'sources.knative.dev',
  version: 'v1beta1',
  kind: 'KafkaSource',
  plural: 'kafkasources',
  singular: 'kafkasource',
  shortNames: Object.freeze(['ks'])
})

export const PingSourceKind: KindInfo = Object.freeze({
  group: 'sources.knative.dev',
  version: 'v1',
  kind: 'PingSource',
  plural: 'pingsources',
  singular: 'pingsource',
  shortNames: Object.freeze(['ps'])
})

/** Every kind the API serves, in the order `shoal get all` lists them. */
export const kinds: readonly KindInfo[] = Object.freeze([KafkaSourceKind, PingSourceKind])

export function apiVersionOf(info: KindInfo): string {
  return info.group === '' ? info.version : `${info.group}/${info.version}`
}

/** The kind a user means by `kafkasources`, `KafkaSource`, `kafkasource` or `ks` (case-insensitive). */
export function lookupKind(name: string): KindInfo | undefined {
  const wanted = name.toLowerCase()
  return kinds.find(
    k =>
      k.plural === wanted ||
      k.singular === wanted ||
      k.kind.toLowerCase() === wanted ||
      k.shortNames.includes(wanted) ||
      `${k.plural}.${k.group}` === wanted
  )
}

export function kindByApiVersion(apiVersion: string, kind: string): KindInfo | undefined {
  return kinds.find(k => apiVersionOf(k) === apiVersion && k.kind === kind)
}

export function kindByPath(group: string, version: string, plural: string): KindInfo | undefined {
  return kinds.find(k => k.group === group && k.version === version && k.plural === plural)
}

/** The store key of a resource: `Kind/namespace/name`. */
export function resourceKey(kind: string, namespace: string, name: string): string {
  return `${kind}/${namespace}/${name}`
}
