import type { DeliverySpec, Destination, FlowControlSpec, KafkaSource, ResolveOptions } from '../api/index.ts'
import {
  oidcTokenKey,
  parseFlowControl,
  parseIsoDuration,
  parseOidcAnnotation,
  resolveDestination,
  resourceKey
} from '../api/index.ts'
import type { BackoffPolicy } from './backoff.ts'

// A source's `delivery` spec resolved into numbers, with Shoal's defaults filled in field by field, and the
// sink and dead letter sink resolved into URLs. See docs/delivery.md for why the defaults are what they are.

/** Where to POST: an absolute http(s) URL and, for https, extra PEM CAs to trust besides the system's. */
export interface SinkEndpoint {
  readonly uri: string
  readonly caCerts?: string
  /** HTTP headers every request to it carries beside the event's (a PingSource's `Kn-Namespace`, as Knative's). */
  readonly headers?: Readonly<Record<string, string>>
  /** The OIDC token every request to it presents (`Authorization: Bearer`), where a Secret holds it. */
  readonly oidc?: OidcTokenRef
}

/** Where the token for a sink's OIDC audience is: a Secret (store key `Secret/<namespace>/<name>`) and its key. */
export interface OidcTokenRef {
  readonly secret: string
  readonly key: string
  readonly audience: string
}

/** The token reference of a source's destination (`sink` or `deadLetterSink`), if its OIDC annotation names one. */
export function oidcTokenRef(
  metadata: { readonly namespace: string; readonly annotations?: Readonly<Record<string, string>> },
  destination: 'sink' | 'deadLetterSink'
): OidcTokenRef | undefined {
  const parsed = parseOidcAnnotation(metadata.annotations)
  if (parsed.kind !== 'oidc') return undefined
  const audience = parsed.oidc[destination]
  if (audience === undefined) return undefined
  return Object.freeze({
    secret: resourceKey('Secret', metadata.namespace, parsed.oidc.serviceAccountName),
    key: oidcTokenKey(audience),
    audience
  })
}

/** A resolved delivery spec. */
export interface DeliveryPolicy {
  /** Retries after the first attempt. */
  readonly retry: number
  readonly backoffPolicy: BackoffPolicy
  readonly backoffDelayMs: number
  /** Per attempt, from its connection slot to the answer. */
  readonly timeoutMs: number
  /** Cap on a Retry-After wait; absent: uncapped; 0: Retry-After is ignored. */
  readonly retryAfterMaxMs?: number
  readonly deadLetterSink?: SinkEndpoint
}

/** What one source's deliveries need: a fairness key, the sink, the policy. */
export interface DeliveryTarget {
  /** Queues and counters are kept per key; `KafkaSource/<namespace>/<name>` by convention. */
  readonly sourceKey: string
  readonly sink: SinkEndpoint
  readonly policy: DeliveryPolicy
  /** Per-sink flow control the source asks for (docs/delivery.md); absent: none, the path of old. */
  readonly flow?: FlowControlSpec
}

/** The defaults of each `delivery` field left out (and of all of them when `delivery` is absent). */
export const DELIVERY_DEFAULTS = Object.freeze({
  retry: 10,
  backoffPolicy: 'exponential',
  backoffDelayMs: 200,
  timeoutMs: 300_000
})

/** The policy a `delivery` spec asks for; `deadLetterSink` is the spec's dead letter sink, already resolved. */
export function resolveDeliveryPolicy(spec: DeliverySpec | undefined, deadLetterSink?: SinkEndpoint): DeliveryPolicy {
  const retryAfterMaxMs = spec?.retryAfterMax === undefined ? undefined : parseIsoDuration(spec.retryAfterMax)
  return Object.freeze({
    retry: spec?.retry ?? DELIVERY_DEFAULTS.retry,
    backoffPolicy: spec?.backoffPolicy ?? DELIVERY_DEFAULTS.backoffPolicy,
    backoffDelayMs:
      spec?.backoffDelay === undefined ? DELIVERY_DEFAULTS.backoffDelayMs : parseIsoDuration(spec.backoffDelay),
    timeoutMs: spec?.timeout === undefined ? DELIVERY_DEFAULTS.timeoutMs : parseIsoDuration(spec.timeout),
    ...(retryAfterMaxMs === undefined ? {} : { retryAfterMaxMs }),
    ...(deadLetterSink === undefined ? {} : { deadLetterSink: Object.freeze({ ...deadLetterSink }) })
  })
}

/** A target, or which destination did not resolve and why (a condition reason and message). */
export type TargetResolution =
  | { readonly kind: 'resolved'; readonly target: DeliveryTarget }
  | {
      readonly kind: 'unresolved'
      readonly field: 'spec.sink' | 'spec.delivery.deadLetterSink'
      readonly reason: string
      readonly message: string
    }

/** The delivery target of a KafkaSource: its sink, its dead letter sink and its delivery policy. */
export function deliveryTargetFor(source: KafkaSource, options: ResolveOptions): TargetResolution {
  const namespace = source.metadata.namespace
  const sink = endpoint(source.spec.sink, namespace, options, oidcTokenRef(source.metadata, 'sink'))
  if (sink.kind === 'unresolved') return { ...sink, field: 'spec.sink' }
  const dls = source.spec.delivery?.deadLetterSink
  const deadLetter =
    dls === undefined ? undefined : endpoint(dls, namespace, options, oidcTokenRef(source.metadata, 'deadLetterSink'))
  if (deadLetter?.kind === 'unresolved') return { ...deadLetter, field: 'spec.delivery.deadLetterSink' }
  // Validation refuses bad values; a stored source is valid, so `invalid` cannot come here and means none.
  const flow = parseFlowControl(source.metadata.annotations)
  return {
    kind: 'resolved',
    target: Object.freeze({
      sourceKey: `KafkaSource/${namespace}/${source.metadata.name}`,
      sink: sink.endpoint,
      policy: resolveDeliveryPolicy(source.spec.delivery, deadLetter?.endpoint),
      ...(flow.kind === 'flow' ? { flow: flow.flow } : {})
    })
  }
}

type EndpointResolution =
  | { readonly kind: 'resolved'; readonly endpoint: SinkEndpoint }
  | { readonly kind: 'unresolved'; readonly reason: string; readonly message: string }

function endpoint(
  dest: Destination,
  namespace: string,
  options: ResolveOptions,
  oidc: OidcTokenRef | undefined
): EndpointResolution {
  const resolved = resolveDestination(dest, namespace, options)
  if (resolved.kind === 'unresolved') return { kind: 'unresolved', reason: resolved.reason, message: resolved.message }
  const caCerts = dest.CACerts
  return {
    kind: 'resolved',
    endpoint: Object.freeze({
      uri: resolved.uri,
      ...(caCerts === undefined ? {} : { caCerts }),
      ...(oidc === undefined ? {} : { oidc })
    })
  }
}
