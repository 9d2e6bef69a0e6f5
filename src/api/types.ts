// The resource types Shoal serves, in Knative's shape and with Knative's field names. Everything a
// validated resource holds is readonly: validateResource returns deeply frozen objects.

/** Kubernetes object metadata; uid, generation, resourceVersion and creationTimestamp are set by the server. */
export interface ObjectMeta {
  readonly name: string
  /** Always set after validation (`default` when the manifest has none). */
  readonly namespace: string
  readonly labels?: Readonly<Record<string, string>>
  readonly annotations?: Readonly<Record<string, string>>
  readonly uid?: string
  readonly generation?: number
  readonly resourceVersion?: string
  readonly creationTimestamp?: string
}

/** A Knative condition: `Ready`, `SinkProvided`, … */
export interface Condition {
  readonly type: string
  readonly status: 'True' | 'False' | 'Unknown'
  readonly reason?: string
  readonly message?: string
  /** RFC 3339, second precision; changes only when `status` changes. */
  readonly lastTransitionTime: string
}

/** Knative duckv1.SourceStatus, as far as Shoal computes it. */
export interface SourceStatus {
  readonly observedGeneration: number
  readonly sinkUri?: string
  readonly sinkCACerts?: string
  readonly conditions: readonly Condition[]
}

/** What a dispatcher's flow control gate towards one sink origin shows: its limit, load and latency now. */
export interface SinkGateFigures {
  /** The sink's origin (`http://host:port`). */
  readonly sink: string
  /** The limit adapts to the sink (`delivery.shoal.dev/adaptive-concurrency`). */
  readonly adaptive: boolean
  /** Requests in flight allowed now (adaptive: where the limit stands now). */
  readonly limit: number
  readonly inFlight: number
  /** Requests waiting for the limit or the rate. */
  readonly queued: number
  /** Smoothed time to an answer, whole milliseconds; absent before the first answer. */
  readonly latencyMs?: number
}

/**
 * One dispatcher's per-sink flow control of a source, as `status.flowControl` lists it (Shoal's extension of the
 * status; docs/delivery.md "Where to see it"): the gate its heartbeats report, towards one sink origin.
 */
export interface FlowControlRow extends SinkGateFigures {
  readonly dispatcher: string
}

/**
 * What a dispatcher's connections to one sink origin show, over every source it delivers there: a stalled sink
 * shows as an old request in flight, and a sink whose backlog drops connections as requests sent again.
 */
export interface SinkOriginFigures {
  /** The origin (`http://host:port`). */
  readonly origin: string
  /** Requests holding a connection slot: connecting, on the wire or waiting for the answer. */
  readonly inFlight: number
  /** How long the oldest request in flight has been, whole milliseconds (0: none). */
  readonly oldestInFlightMs: number
  /** Requests sent again because the sink never read them or no connection could be had, since the start. */
  readonly resent: number
  /** Connections the sink never accepted (each one's request was sent again), since the start. */
  readonly notAccepted: number
}

/**
 * One dispatcher's connections to one origin a source sends to (its sink or dead letter sink), as
 * `status.sinkOrigins` lists it (Shoal's extension of the status; docs/delivery.md "Where to see it").
 */
export interface SinkOriginRow extends SinkOriginFigures {
  readonly dispatcher: string
}

/** Knative duckv1.KReference, restricted to what Shoal resolves: a Service. */
export interface KReference {
  readonly apiVersion: string
  readonly kind: string
  readonly name: string
  /** Defaulted to the source's namespace by validateResource. */
  readonly namespace?: string
}

/** Knative duckv1.Destination: a ref (with an optional relative `uri` path), or an absolute `uri`. */
export interface Destination {
  readonly ref?: KReference
  readonly uri?: string
  /** PEM certificates to trust, in addition to the system's, when the sink is https. */
  readonly CACerts?: string
}

/** Knative eventing duckv1.DeliverySpec; durations are ISO-8601 strings (see parseIsoDuration). */
export interface DeliverySpec {
  readonly deadLetterSink?: Destination
  readonly retry?: number
  readonly backoffPolicy?: 'linear' | 'exponential'
  readonly backoffDelay?: string
  readonly timeout?: string
  readonly retryAfterMax?: string
}

/** Knative duckv1.CloudEventOverrides. */
export interface CloudEventOverrides {
  readonly extensions?: Readonly<Record<string, string>>
}

/** A key of a Kubernetes Secret (corev1.SecretKeySelector). */
export interface SecretKeySelector {
  readonly name: string
  readonly key: string
  readonly optional?: boolean
}

export interface SecretValueFromSource {
  readonly secretKeyRef?: SecretKeySelector
}

export interface KafkaSASLSpec {
  readonly enable?: boolean
  readonly user?: SecretValueFromSource
  readonly password?: SecretValueFromSource
  readonly type?: SecretValueFromSource
}

export interface KafkaTLSSpec {
  readonly enable?: boolean
  readonly cert?: SecretValueFromSource
  readonly key?: SecretValueFromSource
  readonly caCert?: SecretValueFromSource
}

export interface KafkaNetSpec {
  readonly sasl?: KafkaSASLSpec
  readonly tls?: KafkaTLSSpec
}

export interface KafkaSourceSpec {
  /** One `host:port` per entry (a comma-separated entry is split by validateResource). */
  readonly bootstrapServers: readonly string[]
  readonly topics: readonly string[]
  /** Absent until the server fills it in (see defaultConsumerGroup). */
  readonly consumerGroup?: string
  readonly consumers: number
  readonly initialOffset: 'earliest' | 'latest'
  /** Knative's `ordered` and `unordered`; `key` is Shoal's own (one record of a Kafka key in delivery at a time). */
  readonly ordering: 'ordered' | 'unordered' | 'key'
  /** Shoal's own: records in flight per vreplica when unordered or key; absent means DEFAULT_MAX_IN_FLIGHT (100). */
  readonly maxInFlight?: number
  readonly net?: KafkaNetSpec
  readonly sink: Destination
  readonly delivery?: DeliverySpec
  readonly ceOverrides?: CloudEventOverrides
}

export interface PingSourceSpec {
  readonly schedule: string
  /** IANA time zone; absent means UTC. */
  readonly timezone?: string
  readonly contentType?: string
  readonly data?: string
  readonly dataBase64?: string
  readonly sink: Destination
  readonly ceOverrides?: CloudEventOverrides
}

export interface KafkaSource {
  readonly apiVersion: 'sources.knative.dev/v1beta1'
  readonly kind: 'KafkaSource'
  readonly metadata: ObjectMeta
  readonly spec: KafkaSourceSpec
}

export interface PingSource {
  readonly apiVersion: 'sources.knative.dev/v1'
  readonly kind: 'PingSource'
  readonly metadata: ObjectMeta
  readonly spec: PingSourceSpec
}

/** Every resource validateResource returns, discriminated by `kind`. */
export type SourceResource = KafkaSource | PingSource
