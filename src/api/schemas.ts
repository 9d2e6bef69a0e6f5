// JSON Schemas (draft-07) of the resources. They check structure: types, required fields, enums, bounds, and
// `additionalProperties: false` everywhere. Rules a schema cannot say well (names, cron, durations, URLs,
// one-of) live in semantic-checks.ts. The server publishes these in /openapi.json, so they stay plain JSON.

import { deepFreeze } from '../util/index.ts'
import { serverSet } from './schema-parts.ts'

/** A JSON Schema, as plain JSON. */
export type Schema = Readonly<Record<string, unknown>>

const INT32_MAX = 2_147_483_647

const string = (description?: string): Schema => ({
  type: 'string',
  ...(description === undefined ? {} : { description })
})
const nonEmptyString = (description?: string): Schema => ({ ...string(description), minLength: 1 })
const stringMap = (description: string): Schema => ({
  type: 'object',
  description,
  additionalProperties: { type: 'string' }
})
const object = (
  properties: Record<string, Schema>,
  required: readonly string[] = [],
  description?: string
): Schema => ({
  type: 'object',
  ...(description === undefined ? {} : { description }),
  ...(required.length === 0 ? {} : { required }),
  properties,
  additionalProperties: false
})

const metadata = object(
  {
    name: nonEmptyString('DNS-1123 subdomain, at most 253 characters.'),
    namespace: nonEmptyString('DNS-1123 label; defaults to `default`.'),
    labels: stringMap('Kubernetes label keys and values.'),
    annotations: stringMap('Kubernetes annotation keys; string values, 256 KiB in all.'),
    uid: serverSet('string', 'Set by the server; a value in a manifest is overwritten.'),
    generation: { ...serverSet('integer', 'Set by the server; a value in a manifest is overwritten.'), minimum: 0 },
    resourceVersion: serverSet('string', 'Set by the server; a value in a manifest is overwritten.'),
    creationTimestamp: serverSet('string', 'Set by the server; a value in a manifest is overwritten.'),
    // Carried by manifests exported with kubectl; accepted and dropped.
    selfLink: serverSet('string', 'Accepted and ignored.'),
    finalizers: { type: ['array', 'null'], items: { type: 'string' }, description: 'Accepted and ignored.' },
    ownerReferences: { type: ['array', 'null'], items: { type: 'object' }, description: 'Accepted and ignored.' },
    managedFields: { type: ['array', 'null'], items: { type: 'object' }, description: 'Accepted and ignored.' },
    deletionTimestamp: serverSet('string', 'Accepted and ignored.'),
    deletionGracePeriodSeconds: serverSet('integer', 'Accepted and ignored.')
  },
  ['name']
)

const reference = object(
  {
    apiVersion: string('`v1` or `serving.knative.dev/v1`.'),
    kind: string('`Service`: the only kind Shoal resolves.'),
    name: nonEmptyString('The Service name (DNS-1035 label).'),
    namespace: nonEmptyString('Defaults to the namespace of the source.')
  },
  ['apiVersion', 'kind', 'name']
)

const destination = object(
  {
    ref: reference,
    uri: nonEmptyString('Absolute http(s) URL, or with `ref` a path relative to the Service address.'),
    CACerts: nonEmptyString('PEM certificates trusted for an https sink.')
  },
  [],
  'Exactly one of `ref` or `uri`; `ref` may come with a relative `uri`.'
)

const duration = (description: string): Schema => nonEmptyString(`ISO-8601 duration. ${description}`)

const delivery = object({
  deadLetterSink: destination,
  retry: { type: 'integer', minimum: 0, maximum: INT32_MAX, description: 'Retries after the first attempt.' },
  backoffPolicy: { type: 'string', enum: ['linear', 'exponential'] },
  backoffDelay: duration('Delay before the first retry.'),
  timeout: duration('Timeout of each attempt; greater than zero.'),
  retryAfterMax: duration('Upper bound on a Retry-After header; PT0S ignores the header.')
})

const ceOverrides = object({
  extensions: stringMap('CloudEvents extension attributes added to every event; names are lowercase a-z0-9.')
})

const secretValue = object({
  secretKeyRef: object({ name: nonEmptyString(), key: nonEmptyString(), optional: { type: 'boolean' } }, [
    'name',
    'key'
  ])
})

const net = object({
  sasl: object({ enable: { type: 'boolean' }, user: secretValue, password: secretValue, type: secretValue }),
  tls: object({ enable: { type: 'boolean' }, cert: secretValue, key: secretValue, caCert: secretValue })
})

const envelope = (apiVersion: string, kind: string, spec: Schema): Schema => ({
  $schema: 'http://json-schema.org/draft-07/schema#',
  title: kind,
  type: 'object',
  required: ['apiVersion', 'kind', 'metadata', 'spec'],
  properties: {
    apiVersion: { type: 'string', const: apiVersion },
    kind: { type: 'string', const: kind },
    metadata,
    spec,
    status: { type: 'object', description: 'Accepted and ignored: status is computed by Shoal.' }
  },
  additionalProperties: false
})

const kafkaSource = envelope(
  'sources.knative.dev/v1beta1',
  'KafkaSource',
  object(
    {
      bootstrapServers: {
        type: 'array',
        minItems: 1,
        items: nonEmptyString('host:port; a comma-separated list in one entry is split.')
      },
      topics: { type: 'array', minItems: 1, items: nonEmptyString('Kafka topic name.') },
      consumerGroup: {
        ...nonEmptyString('Kafka consumer group id; the server fills it in when absent.'),
        maxLength: 255
      },
      consumers: { type: 'integer', minimum: 0, maximum: INT32_MAX, description: 'Group members; default 1.' },
      initialOffset: { type: 'string', enum: ['earliest', 'latest'], description: 'Default latest.' },
      ordering: {
        type: 'string',
        enum: ['ordered', 'unordered', 'key'],
        description:
          "Default ordered. `key` is Shoal's: records of one Kafka key one at a time, in offset order; other keys in parallel."
      },
      maxInFlight: {
        type: 'integer',
        minimum: 1,
        maximum: 100_000,
        description:
          'Shoal: records in flight per vreplica when unordered or key (default 100; ordered keeps one per partition).'
      },
      net,
      sink: destination,
      delivery,
      ceOverrides
    },
    ['bootstrapServers', 'topics', 'sink']
  )
)

const pingSource = envelope(
  'sources.knative.dev/v1',
  'PingSource',
  object(
    {
      schedule: nonEmptyString('Cron: 5 fields, or 6 with seconds first, or @hourly-style. Default `* * * * *`.'),
      timezone: nonEmptyString('IANA time zone; default UTC.'),
      contentType: nonEmptyString('Media type of data or dataBase64.'),
      data: string('Event data; mutually exclusive with dataBase64.'),
      dataBase64: string('Base64 event data; mutually exclusive with data.'),
      sink: destination,
      ceOverrides
    },
    ['sink']
  )
)

/** The JSON Schema of KafkaSource. */
export const kafkaSourceSchema: Schema = deepFreeze(kafkaSource)
/** The JSON Schema of PingSource. */
export const pingSourceSchema: Schema = deepFreeze(pingSource)

/** The JSON Schema of each kind, by kind name (for /openapi.json). */
export const schemas: Readonly<Record<string, Schema>> = Object.freeze({
  KafkaSource: kafkaSourceSchema,
  PingSource: pingSourceSchema
})
