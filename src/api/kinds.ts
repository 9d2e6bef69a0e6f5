/**
 * What the API serves: one entry per resource kind, with the names kubectl users type for it. A kind may be served
 * at several versions of one schema (Knative serves KafkaSource at v1beta1 and v1): `version` is the one a
 * request named (`kindByPath`, `kindByApiVersion`), the storage version by default; objects are stored at
 * `versions[0]` and shown at the version asked for.
 */
export interface KindInfo {
  readonly group: string
  readonly version: string
  /** The versions served, the storage version first. */
  readonly versions: readonly string[]
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
  versions: Object.freeze(['v1beta1', 'v1']),
  kind: 'KafkaSource',
  plural: 'kafkasources',
  singular: 'kafkasource',
  shortNames: Object.freeze(['ks']),
  namespaced: true
})

export const PingSourceKind: KindInfo = Object.freeze({
  group: 'sources.knative.dev',
  version: 'v1',
  versions: Object.freeze(['v1', 'v1beta2']),
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
  versions: Object.freeze(['v1alpha1']),
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
  versions: Object.freeze(['v1']),
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

/** Every apiVersion a kind is served at, the storage one first. */
export function servedApiVersions(info: KindInfo): string[] {
  return info.versions.map(version => (info.group === '' ? version : `${info.group}/${version}`))
}

/** The kind as served at `version` (one of its versions), or undefined. */
export function atVersion(info: KindInfo, version: string): KindInfo | undefined {
  if (!info.versions.includes(version)) return undefined
  return version === info.version ? info : Object.freeze({ ...info, version })
}

/** The storage apiVersion of a kind: what the store holds, whatever version an object came in at. */
export function storageApiVersionOf(info: KindInfo): string {
  return servedApiVersions(info)[0]!
}

/**
 * The kind a user means by `kafkasources`, `KafkaSource`, `kafkasource`, `ks` or `kafkasources.sources.knative.dev`
 * (case-insensitive) — at its storage version — or by `kafkasources.v1.sources.knative.dev`, at that version (as
 * kubectl reads `resource.version.group`).
 */
export function lookupKind(name: string): KindInfo | undefined {
  const wanted = name.toLowerCase()
  for (const k of kinds) {
    if (
      k.plural === wanted ||
      k.singular === wanted ||
      k.kind.toLowerCase() === wanted ||
      k.shortNames.includes(wanted) ||
      `${k.plural}.${k.group}` === wanted
    )
      return k
    for (const version of k.versions) {
      if (k.group !== '' && `${k.plural}.${version}.${k.group}` === wanted) return atVersion(k, version)
    }
  }
  return undefined
}

export function kindByApiVersion(apiVersion: string, kind: string): KindInfo | undefined {
  for (const k of kinds) {
    if (k.kind !== kind) continue
    const version = k.versions.find(v => (k.group === '' ? v : `${k.group}/${v}`) === apiVersion)
    if (version !== undefined) return atVersion(k, version)
  }
  return undefined
}

export function kindByPath(group: string, version: string, plural: string): KindInfo | undefined {
  const k = kinds.find(k => k.group === group && k.plural === plural)
  return k === undefined ? undefined : atVersion(k, version)
}

/** The store key of a resource: `Kind/namespace/name` (an empty namespace for cluster-wide kinds). */
export function resourceKey(kind: string, namespace: string, name: string): string {
  return `${kind}/${namespace}/${name}`
}
