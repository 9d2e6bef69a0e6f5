// The field paths under `spec` of Knative's CRDs, one list per served version, with each field's type as the CRD's
// openAPIV3Schema gives it (`string[]`: an array of strings; `map`: an object of string values). Facts only, read
// from the CRDs, not their text; knative-crd-fields.test.ts holds Shoal's schemas to them.
//
// KafkaSource: knative-extensions/eventing-kafka-broker
//   control-plane/config/eventing-kafka-broker/100-source/100-kafka-source.yaml (eventing-kafka-source/… links to it)
//   at 7d8fe89f4b5ef86c0b59ccf82613ec9ce1118438 (knative-v1.23.0+2; the file last changed in d2f2614f, Jan 2026).
// PingSource: knative/eventing config/core/resources/pingsource.yaml
//   at 8cf4c4b673034020f5ecab731fb6a2a7f9350244 (knative-v1.22.0+20; the file last changed in 6b6f6d15, May 2024).

/** A field's type in a Knative CRD. */
export type CrdFieldType = 'string' | 'integer' | 'boolean' | 'object' | 'map' | 'string[]'

/** Field path (`spec.…`) to type, for one version of a CRD. */
export type CrdFields = Readonly<Record<string, CrdFieldType>>

/**
 * duckv1.Destination's fields at `path`. KafkaSource's CRD also lists the ref's `address` and `group`; PingSource's
 * does not.
 */
function destination(path: string, refAddressAndGroup: boolean): CrdFields {
  return {
    [path]: 'object',
    [`${path}.ref`]: 'object',
    ...(refAddressAndGroup ? { [`${path}.ref.address`]: 'string', [`${path}.ref.group`]: 'string' } : {}),
    [`${path}.ref.apiVersion`]: 'string',
    [`${path}.ref.kind`]: 'string',
    [`${path}.ref.name`]: 'string',
    [`${path}.ref.namespace`]: 'string',
    [`${path}.uri`]: 'string',
    [`${path}.CACerts`]: 'string',
    [`${path}.audience`]: 'string'
  }
}

/** A field that names a key of a Secret (`secretKeyRef`), at `path`. */
function secretKeyRef(path: string): CrdFields {
  return {
    [path]: 'object',
    [`${path}.secretKeyRef`]: 'object',
    [`${path}.secretKeyRef.key`]: 'string',
    [`${path}.secretKeyRef.name`]: 'string',
    [`${path}.secretKeyRef.optional`]: 'boolean'
  }
}

/** KafkaSource v1beta1 (Knative's storage version): its spec fields. */
const kafkaSourceV1beta1: CrdFields = {
  'spec.bootstrapServers': 'string[]',
  'spec.ceOverrides': 'object',
  'spec.ceOverrides.extensions': 'map',
  'spec.consumerGroup': 'string',
  'spec.consumers': 'integer',
  'spec.delivery': 'object',
  'spec.delivery.backoffDelay': 'string',
  'spec.delivery.backoffPolicy': 'string',
  ...destination('spec.delivery.deadLetterSink', true),
  'spec.delivery.retry': 'integer',
  'spec.delivery.retryAfterMax': 'string',
  'spec.delivery.timeout': 'string',
  'spec.initialOffset': 'string',
  'spec.net': 'object',
  'spec.net.sasl': 'object',
  'spec.net.sasl.enable': 'boolean',
  ...secretKeyRef('spec.net.sasl.password'),
  ...secretKeyRef('spec.net.sasl.type'),
  ...secretKeyRef('spec.net.sasl.user'),
  'spec.net.tls': 'object',
  ...secretKeyRef('spec.net.tls.caCert'),
  ...secretKeyRef('spec.net.tls.cert'),
  'spec.net.tls.enable': 'boolean',
  ...secretKeyRef('spec.net.tls.key'),
  'spec.ordering': 'string',
  ...destination('spec.sink', true),
  'spec.topics': 'string[]'
}

/** KafkaSource's spec fields by version: v1 (served) is v1beta1 plus AWS MSK IAM's `roleARN` and `tokenProvider`. */
export const knativeKafkaSourceFields: Readonly<Record<'v1beta1' | 'v1', CrdFields>> = {
  v1beta1: kafkaSourceV1beta1,
  v1: {
    ...kafkaSourceV1beta1,
    ...secretKeyRef('spec.net.sasl.roleARN'),
    ...secretKeyRef('spec.net.sasl.tokenProvider')
  }
}

/** PingSource v1 (Knative's storage version): its spec fields. */
const pingSourceV1: CrdFields = {
  'spec.ceOverrides': 'object',
  'spec.ceOverrides.extensions': 'map',
  'spec.contentType': 'string',
  'spec.data': 'string',
  'spec.dataBase64': 'string',
  'spec.schedule': 'string',
  ...destination('spec.sink', false),
  'spec.timezone': 'string'
}

/** PingSource's spec fields by version: v1beta2 (served) holds the same fields as v1. */
export const knativePingSourceFields: Readonly<Record<'v1' | 'v1beta2', CrdFields>> = {
  v1: pingSourceV1,
  v1beta2: pingSourceV1
}
