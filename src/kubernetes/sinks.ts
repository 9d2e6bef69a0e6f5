// Sinks the Kubernetes way: a `ref` to any Addressable (an object whose status says its URL: a Knative Service,
// Broker or Channel) resolves through the API, as Knative's resolver does. A core Service ref stays as it is: Shoal
// resolves it to cluster DNS itself (`--service-url-template`).
import { KubernetesObjectApi } from '@kubernetes/client-node'
import type { KubeConfig } from '@kubernetes/client-node'

/** Knative's duckv1.Destination, as it stands in a spec. */
interface Destination {
  readonly ref?: {
    readonly apiVersion?: string
    readonly kind?: string
    readonly name?: string
    readonly namespace?: string
  }
  readonly uri?: string
  readonly CACerts?: string
  readonly audience?: string
}

/** An Addressable's address (duckv1.Addressable): its URL, and what to trust and present when it is https. */
export interface Address {
  readonly url: string
  readonly CACerts?: string
  /** The OIDC audience of the address (Knative's `status.address.audience`). */
  readonly audience?: string
}

export type SinkResolution =
  | { readonly kind: 'resolved'; readonly spec: unknown }
  | { readonly kind: 'unresolved'; readonly reason: string; readonly message: string }

/** Reads an Addressable's address; undefined when the object exists but has none yet. Throws NotFound as it is. */
export type AddressLookup = (
  ref: Required<Pick<NonNullable<Destination['ref']>, 'apiVersion' | 'kind' | 'name' | 'namespace'>>
) => Promise<Address | undefined>

/** Core Services resolve in Shoal, through its URL template; so do Knative Services. */
const RESOLVED_BY_SHOAL = new Set(['v1/Service', 'serving.knative.dev/v1/Service'])

/**
 * The spec with each destination (`sink`, `delivery.deadLetterSink`) whose ref Shoal cannot resolve itself turned
 * into the URI its Addressable says, a relative `uri` resolved against it (RFC 3986) and the address's CA
 * certificates kept; or why one did not resolve.
 */
export async function resolveSinks(spec: unknown, namespace: string, lookup: AddressLookup): Promise<SinkResolution> {
  if (typeof spec !== 'object' || spec === null) return { kind: 'resolved', spec }
  const source = spec as Record<string, unknown>
  const sink = await resolveOne(source['sink'] as Destination | undefined, namespace, lookup, 'spec.sink')
  if (sink.kind === 'unresolved') return sink
  const delivery = source['delivery'] as Record<string, unknown> | undefined
  const deadLetter = await resolveOne(
    delivery?.['deadLetterSink'] as Destination | undefined,
    namespace,
    lookup,
    'spec.delivery.deadLetterSink'
  )
  if (deadLetter.kind === 'unresolved') return deadLetter
  return {
    kind: 'resolved',
    spec: {
      ...source,
      ...(sink.destination === undefined ? {} : { sink: sink.destination }),
      ...(deadLetter.destination === undefined
        ? {}
        : { delivery: { ...delivery, deadLetterSink: deadLetter.destination } })
    }
  }
}

async function resolveOne(
  destination: Destination | undefined,
  namespace: string,
  lookup: AddressLookup,
  field: string
): Promise<
  { readonly kind: 'resolved'; readonly destination?: Destination } | Extract<SinkResolution, { kind: 'unresolved' }>
> {
  const ref = destination?.ref
  if (destination === undefined || ref === undefined) return { kind: 'resolved' }
  const { apiVersion, kind, name } = ref
  if (apiVersion === undefined || kind === undefined || name === undefined) return { kind: 'resolved' }
  if (RESOLVED_BY_SHOAL.has(`${apiVersion}/${kind}`)) return { kind: 'resolved' }
  const where = `${kind} ${ref.namespace ?? namespace}/${name} (${apiVersion})`
  let address: Address | undefined
  try {
    address = await lookup({ apiVersion, kind, name, namespace: ref.namespace ?? namespace })
  } catch (error) {
    if (codeOf(error) === 404) {
      return { kind: 'unresolved', reason: 'NotFound', message: `${field}.ref: ${where} not found` }
    }
    throw error
  }
  if (address === undefined) {
    return {
      kind: 'unresolved',
      reason: 'AddressNotSet',
      message: `${field}.ref: ${where} has no status.address.url yet`
    }
  }
  if (destination.uri !== undefined && !URL.canParse(destination.uri, address.url)) {
    return {
      kind: 'unresolved',
      reason: 'InvalidURI',
      message: `${field}.uri ${destination.uri} is not a valid relative URI`
    }
  }
  const uri = destination.uri === undefined ? address.url : new URL(destination.uri, address.url).href
  const CACerts = destination.CACerts ?? address.CACerts
  const audience = destination.audience ?? address.audience
  const { ref: _ref, uri: _uri, ...rest } = destination
  return {
    kind: 'resolved',
    destination: {
      ...rest,
      uri,
      ...(CACerts === undefined ? {} : { CACerts }),
      ...(audience === undefined ? {} : { audience })
    }
  }
}

function codeOf(error: unknown): number | undefined {
  const code = (error as { code?: unknown } | undefined)?.code
  return typeof code === 'number' ? code : undefined
}

/** How long an address read from the API is used before it is read again. */
const ADDRESS_TTL_MS = 5_000

/** Reads addresses through the API (any kind, by discovery), each kept a few seconds. */
export function addressLookup(config: KubeConfig): AddressLookup {
  const objects = KubernetesObjectApi.makeApiClient(config)
  const cache = new Map<string, { readonly at: number; readonly address: Address | undefined }>()
  return async ref => {
    const key = `${ref.apiVersion}/${ref.kind}/${ref.namespace}/${ref.name}`
    const cached = cache.get(key)
    if (cached !== undefined && Date.now() - cached.at < ADDRESS_TTL_MS) return cached.address
    const object = (await objects.read({
      apiVersion: ref.apiVersion,
      kind: ref.kind,
      metadata: { name: ref.name, namespace: ref.namespace }
    })) as { status?: { address?: { url?: string; CACerts?: string; audience?: string } } }
    const found = object.status?.address
    const address =
      typeof found?.url === 'string' && found.url !== ''
        ? {
            url: found.url,
            ...(typeof found.CACerts === 'string' ? { CACerts: found.CACerts } : {}),
            ...(typeof found.audience === 'string' && found.audience !== '' ? { audience: found.audience } : {})
          }
        : undefined
    cache.set(key, { at: Date.now(), address })
    return address
  }
}
