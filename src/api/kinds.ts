/** What the API serves: one entry per resource kind, with the names kubectl users type for it. */
export interface KindInfo {
  readonly group: string
  readonly version: string
  readonly kind: string
  readonly plural: string
  readonly singular: string
  readonly shortNames: readonly string[]
  /** False for cluster-wide kinds (Dispatcher): their paths and keys have no namespace. */
  readonly namespaced: boolean
}

export const KafkaSourceKind: KindInfo = Object.freeze({
  group: 'sources.knative.dev',
  version: 'v1beta1',
  kind: 'KafkaSource',
  plural: 'kafkasources',
  singular: 'kafkasource',
  shortNames: Object.freeze(['ks']),
  namespaced: true
})

export const PingSourceKind: KindInfo = Object.freeze({
  group: 'sources.knative.dev',
  version: 'v1',
  kind: 'PingSource',
  plural: 'pingsources',
  singular: 'pingsource',
  shortNames: Object.freeze(['ps']),
  namespaced: true
})

/** A dispatcher's desired state (today: whether it is cordoned); cluster-wide, like a Kubernetes Node. */
export const DispatcherKind: KindInfo = Object.freeze({
  group: 'shoal.dev',
  version: 'v1alpha1',
  kind: 'Dispatcher',
  plural: 'dispatchers',
  singular: 'dispatcher',
  shortNames: Object.freeze(['disp']),
  namespaced: false
})

/** A Kubernetes core `v1` Secret: credentials a KafkaSource's `spec.net` refers to; stored encrypted. */
export const SecretKind: KindInfo = Object.freeze({
  group: '',
  version: 'v1',
  kind: 'Secret',
  plural: 'secrets',
  singular: 'secret',
  shortNames: Object.freeze([]),
  namespaced: true
})

/** The source kinds, in the order `shoal get all` lists them. */
export const sourceKinds: readonly KindInfo[] = Object.freeze([KafkaSourceKind, PingSourceKind])

/** Every kind the API serves. */
export const kinds: readonly KindInfo[] = Object.freeze([KafkaSourceKind, PingSourceKind, DispatcherKind, SecretKind])

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

/** The store key of a resource: `Kind/namespace/name` (an empty namespace for cluster-wide kinds). */
export function resourceKey(kind: string, namespace: string, name: string): string {
  return `${kind}/${namespace}/${name}`
}
