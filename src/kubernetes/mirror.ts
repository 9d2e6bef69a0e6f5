// What the operator does with a Kubernetes source object, decided without I/O: whether Shoal claims it, the Shoal
// manifest it becomes, and the status Kubernetes gets back (docs/kubernetes.md, "Sources through the Kubernetes API").
import { createHash } from 'node:crypto'
import { isDeepStrictEqual } from 'node:util'
import type { KindInfo } from '../api/index.ts'

/** The finalizer Shoal puts on every source it runs: the object stays until no dispatcher delivers for it. */
export const FINALIZER = 'sources.shoal.dev/delivery'

/**
 * The claim: a source is Shoal's when its namespace carries this label with the value `shoal`, or the source
 * carries this annotation with the value `shoal`. The annotation with any other value (`knative`) leaves it to
 * another controller even in a claimed namespace. `--kubernetes-claim all` claims every source without either.
 */
export const CLAIM_KEY = 'sources.shoal.dev/controller'
export const CLAIM_VALUE = 'shoal'

export type ClaimRule = 'labelled' | 'all'

/** The part of a Kubernetes object's metadata the operator reads. */
export interface KubeMetadata {
  readonly name?: string
  readonly namespace?: string
  readonly uid?: string
  readonly generation?: number
  readonly resourceVersion?: string
  readonly labels?: Readonly<Record<string, string>>
  readonly annotations?: Readonly<Record<string, string>>
  readonly finalizers?: readonly string[]
  readonly deletionTimestamp?: string | Date
}

/** A Knative source as the Kubernetes API holds it. */
export interface KubeSource {
  readonly apiVersion?: string
  readonly kind?: string
  readonly metadata?: KubeMetadata
  readonly spec?: unknown
  readonly status?: unknown
}

/** The Shoal object a claimed source becomes, as `shoal apply` would send it. */
export interface ShoalManifest {
  readonly apiVersion: string
  readonly kind: string
  readonly metadata: {
    readonly name: string
    readonly namespace: string
    readonly labels?: Readonly<Record<string, string>>
    readonly annotations?: Readonly<Record<string, string>>
  }
  readonly spec: unknown
}

/** Annotations Kubernetes tools write that mean nothing to the source. */
const TOOL_ANNOTATIONS = new Set(['kubectl.kubernetes.io/last-applied-configuration'])

/** Whether Shoal runs this source, given its namespace's labels. */
export function claims(
  source: KubeSource,
  namespaceLabels: Readonly<Record<string, string>>,
  rule: ClaimRule
): boolean {
  const own = source.metadata?.annotations?.[CLAIM_KEY]
  if (own !== undefined) return own === CLAIM_VALUE
  return rule === 'all' || namespaceLabels[CLAIM_KEY] === CLAIM_VALUE
}

export function isDeleting(source: KubeSource): boolean {
  return source.metadata?.deletionTimestamp !== undefined && source.metadata.deletionTimestamp !== null
}

export function hasFinalizer(source: KubeSource): boolean {
  return (source.metadata?.finalizers ?? []).includes(FINALIZER)
}

/** `namespace/name`, the operator's key for an object of one kind. */
export function objectKey(source: KubeSource): string {
  return `${source.metadata?.namespace ?? ''}/${source.metadata?.name ?? ''}`
}

/**
 * The annotation that says which Kubernetes spec Shoal's copy holds: the object's generation and a digest of the
 * spec as given to Shoal (sinks resolved). Shoal fills in defaults, so its spec is not compared with the object's.
 */
export const SPEC_ANNOTATION = 'sources.shoal.dev/kubernetes-spec'

/**
 * The manifest Shoal is given for a source: its identity, labels, annotations and `spec` (the object's, with its sinks
 * resolved), at its API version, marked with the generation and spec it came from.
 */
export function shoalManifest(source: KubeSource, info: KindInfo, spec: unknown = source.spec ?? {}): ShoalManifest {
  const metadata = source.metadata ?? {}
  const digest = createHash('sha256').update(JSON.stringify(spec)).digest('hex').slice(0, 16)
  const annotations = {
    ...Object.fromEntries(Object.entries(metadata.annotations ?? {}).filter(([key]) => !TOOL_ANNOTATIONS.has(key))),
    [SPEC_ANNOTATION]: `${metadata.generation ?? 0}/${digest}`
  }
  return {
    apiVersion: source.apiVersion ?? `${info.group}/${info.version}`,
    kind: info.kind,
    metadata: {
      name: metadata.name ?? '',
      namespace: metadata.namespace ?? 'default',
      ...(metadata.labels === undefined || Object.keys(metadata.labels).length === 0
        ? {}
        : { labels: metadata.labels }),
      annotations
    },
    spec
  }
}

/** A Shoal object as its API answers (the parts compared and presented). */
export interface ShoalObject {
  readonly metadata?: {
    readonly generation?: number
    readonly resourceVersion?: string
    readonly labels?: Readonly<Record<string, string>>
    readonly annotations?: Readonly<Record<string, string>>
  }
  readonly spec?: unknown
  readonly status?: { readonly observedGeneration?: number } & Readonly<Record<string, unknown>>
}

/**
 * Whether Shoal already runs what the manifest says: the same labels and annotations, the spec mark among them
 * (Shoal's spec has its defaults filled in, so it is not compared itself).
 */
export function inSync(shoal: ShoalObject, manifest: ShoalManifest): boolean {
  return (
    isDeepStrictEqual(shoal.metadata?.labels ?? {}, manifest.metadata.labels ?? {}) &&
    isDeepStrictEqual(shoal.metadata?.annotations ?? {}, manifest.metadata.annotations ?? {})
  )
}

/** A condition as Knative writes it. */
export interface KubeCondition {
  readonly type: string
  readonly status: 'True' | 'False' | 'Unknown'
  readonly reason?: string
  readonly message?: string
  readonly lastTransitionTime?: string
  readonly severity?: string
}

/**
 * The status Kubernetes gets: Shoal's own, with `observedGeneration` in the Kubernetes object's generations. Shoal
 * counts generations of its own copy; when that copy holds what the object says now and Shoal has observed it, the
 * object's current generation is observed. Otherwise what the object's status said stands.
 */
export function kubeStatus(source: KubeSource, shoal: ShoalObject, manifest: ShoalManifest): Record<string, unknown> {
  const status = { ...(shoal.status ?? {}) }
  const observedHere =
    inSync(shoal, manifest) &&
    shoal.status?.observedGeneration !== undefined &&
    shoal.status.observedGeneration === shoal.metadata?.generation
  const previous = (source.status as { observedGeneration?: number } | undefined)?.observedGeneration
  const observedGeneration = observedHere ? source.metadata?.generation : previous
  delete status['observedGeneration']
  return observedGeneration === undefined ? status : { ...status, observedGeneration }
}

/** A status that says Shoal refused the object: Ready False, with Shoal's reason and message. */
export function refusedStatus(source: KubeSource, reason: string, message: string, now: Date): Record<string, unknown> {
  const previous = (source.status ?? {}) as { conditions?: readonly KubeCondition[] }
  const ready: KubeCondition = {
    type: 'Ready',
    status: 'False',
    reason,
    message,
    lastTransitionTime: sameCondition(previous.conditions, 'Ready', 'False', reason)
      ? (previous.conditions!.find(c => c.type === 'Ready')!.lastTransitionTime ?? now.toISOString())
      : now.toISOString()
  }
  const others = (previous.conditions ?? []).filter(c => c.type !== 'Ready')
  return {
    ...(source.status as Record<string, unknown> | undefined),
    observedGeneration: source.metadata?.generation,
    conditions: [...others, ready].sort((a, b) => a.type.localeCompare(b.type))
  }
}

function sameCondition(
  conditions: readonly KubeCondition[] | undefined,
  type: string,
  status: string,
  reason: string
): boolean {
  const found = conditions?.find(c => c.type === type)
  return found !== undefined && found.status === status && found.reason === reason
}

/** Whether writing `next` would change what the object's status holds. */
export function statusChanged(source: KubeSource, next: Record<string, unknown>): boolean {
  return !isDeepStrictEqual(comparable(source.status), comparable(next))
}

/** JSON's view: what went through the API and what is about to differ only where JSON does. */
function comparable(value: unknown): unknown {
  return value === undefined ? {} : JSON.parse(JSON.stringify(value))
}
