// Shoal's schemas against Knative's CRDs (issue 23): every spec field of every version Knative serves is either
// accepted, or refused at its own path with a reason (never a bare "unknown field"); and every spec field Shoal
// accepts is Knative's, or a Shoal extension listed here with its reason. docs/conformance.md, "Schemas against
// Knative's CRDs", lists the same refusals and extensions.

import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { schemas, validateResource } from '../../src/api/index.ts'
import type { Schema } from '../../src/api/index.ts'
import { ShoalError } from '../../src/errors/index.ts'
import type { FieldError } from '../../src/errors/index.ts'
import { knativeKafkaSourceFields, knativePingSourceFields } from './knative-crd-fields.ts'
import type { CrdFieldType, CrdFields } from './knative-crd-fields.ts'

const serviceRef = { apiVersion: 'serving.knative.dev/v1', kind: 'Service', name: 'display' }
const secretValue = (key: string): unknown => ({ secretKeyRef: { name: 'kafka-credentials', key } })
const CERT = '-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUU2hvYWwgdGVzdA==\n-----END CERTIFICATE-----\n'
const JSON_DATA = '{"message":"hello"}'
// A client certificate needs its key: the two go together.
const tls = { enable: true, cert: secretValue('tls.crt'), key: secretValue('tls.key') }

// A plausible value for a field, by its name and type. Objects are whole (their required fields set), so setting
// a field deep inside one first puts a whole object at each missing parent, as a user writes it.
const SAMPLES: Readonly<Record<CrdFieldType, Readonly<Record<string, unknown>>>> = {
  string: {
    apiVersion: 'serving.knative.dev/v1',
    kind: 'Service',
    name: 'display',
    namespace: 'team-a',
    group: 'serving.knative.dev',
    address: 'default',
    uri: '/events', // relative: the destination carries a ref
    CACerts: CERT,
    audience: 'https://display.team-a.example.com',
    backoffDelay: 'PT0.5S',
    backoffPolicy: 'exponential',
    retryAfterMax: 'PT1M',
    timeout: 'PT10S',
    consumerGroup: 'orders-readers',
    initialOffset: 'earliest',
    ordering: 'unordered',
    key: 'password',
    schedule: '*/10 * * * *',
    timezone: 'Europe/Paris',
    contentType: 'application/json',
    data: JSON_DATA,
    dataBase64: Buffer.from(JSON_DATA).toString('base64')
  },
  integer: { consumers: 2, retry: 3 },
  boolean: { enable: true, optional: false },
  'string[]': { bootstrapServers: ['kafka-1.kafka:9092'], topics: ['payments'] },
  map: { extensions: { team: 'orders' } },
  object: {
    sink: { ref: serviceRef },
    ref: serviceRef,
    ceOverrides: { extensions: { team: 'orders' } },
    delivery: { retry: 3 },
    deadLetterSink: { ref: { ...serviceRef, name: 'dead-letters' } },
    net: { tls },
    sasl: { enable: true, user: secretValue('user'), password: secretValue('password') },
    tls,
    secretKeyRef: { name: 'kafka-credentials', key: 'value' },
    user: secretValue('user'),
    password: secretValue('password'),
    type: secretValue('saslType'),
    caCert: secretValue('ca.crt'),
    cert: secretValue('tls.crt'),
    key: secretValue('tls.key'),
    roleARN: secretValue('roleARN'),
    tokenProvider: secretValue('tokenProvider')
  }
}

function sample(path: string, type: CrdFieldType): unknown {
  const name = path.slice(path.lastIndexOf('.') + 1)
  if (!Object.hasOwn(SAMPLES[type], name)) throw new Error(`no sample ${type} for ${path}: add one to SAMPLES`)
  return structuredClone(SAMPLES[type][name])
}

interface Version {
  readonly kind: 'KafkaSource' | 'PingSource'
  readonly version: string
  readonly knative: CrdFields
  /** Knative fields Shoal refuses at this version (a field inside one is refused at it). */
  readonly refused: readonly string[]
}

// Why each is refused is the hint in UNSUPPORTED_HINTS (src/api/validate.ts); docs/conformance.md repeats it.
const refusedInDestinations = [
  'spec.sink.ref.address',
  'spec.sink.ref.group',
  'spec.sink.audience',
  'spec.delivery.deadLetterSink.ref.address',
  'spec.delivery.deadLetterSink.ref.group',
  'spec.delivery.deadLetterSink.audience'
]

const versions: readonly Version[] = [
  {
    kind: 'KafkaSource',
    version: 'v1beta1',
    knative: knativeKafkaSourceFields.v1beta1,
    refused: refusedInDestinations
  },
  {
    kind: 'KafkaSource',
    version: 'v1',
    knative: knativeKafkaSourceFields.v1,
    refused: [...refusedInDestinations, 'spec.net.sasl.roleARN', 'spec.net.sasl.tokenProvider']
  },
  { kind: 'PingSource', version: 'v1', knative: knativePingSourceFields.v1, refused: ['spec.sink.audience'] },
  { kind: 'PingSource', version: 'v1beta2', knative: knativePingSourceFields.v1beta2, refused: ['spec.sink.audience'] }
]

/** Spec fields Shoal accepts that no Knative version has, each with why Shoal has it. */
const SHOAL_EXTENSIONS: Readonly<Record<'KafkaSource' | 'PingSource', Readonly<Record<string, string>>>> = {
  KafkaSource: {
    'spec.maxInFlight':
      "records in flight per vreplica when ordering is unordered or key; Knative's dispatcher takes its concurrency from its own config, not the source"
  },
  PingSource: {}
}

function baseManifest(kind: Version['kind'], version: string): Record<string, unknown> {
  const spec =
    kind === 'KafkaSource'
      ? { bootstrapServers: ['kafka-0.kafka:9092'], topics: ['orders'], sink: { ref: serviceRef } }
      : { sink: { ref: serviceRef } }
  return structuredClone({ apiVersion: `sources.knative.dev/${version}`, kind, metadata: { name: 'crd-fields' }, spec })
}

type Json = Record<string, unknown>
const isRecord = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value)

/** The minimal manifest with `path` set to a sample of its type, whole samples at missing parents. */
function withField(v: Version, path: string): Json {
  const manifest = baseManifest(v.kind, v.version)
  const keys = path.split('.')
  let node = manifest
  keys.forEach((key, i) => {
    const here = keys.slice(0, i + 1).join('.')
    const type = here === 'spec' ? 'object' : v.knative[here]
    if (type === undefined) throw new Error(`${here} is not in the CRD list`)
    if (i === keys.length - 1) node[key] = sample(here, type)
    else {
      if (!isRecord(node[key])) node[key] = sample(here, type)
      node = node[key] as Json
    }
  })
  return manifest
}

type Outcome = { kind: 'accepted'; resource: unknown } | { kind: 'refused'; fields: readonly FieldError[] }

function outcomeOf(manifest: unknown): Outcome {
  try {
    return { kind: 'accepted', resource: validateResource(manifest) }
  } catch (error) {
    if (error instanceof ShoalError && error.code === 'SHOAL_INVALID') return { kind: 'refused', fields: error.fields }
    throw error
  }
}

function valueAt(value: unknown, path: string): unknown {
  let node = value
  for (const key of path.split('.')) node = isRecord(node) ? node[key] : undefined
  return node
}

/** Every property path under spec in a Shoal schema (string maps and array items are leaves). */
function schemaFields(schema: unknown, prefix: string): string[] {
  const properties = isRecord(schema) ? schema['properties'] : undefined
  if (!isRecord(properties)) return []
  return Object.entries(properties).flatMap(([name, child]) => [
    `${prefix}.${name}`,
    ...schemaFields(child, `${prefix}.${name}`)
  ])
}

function shoalSpecFields(kind: Version['kind']): string[] {
  const schema = schemas[kind] as Schema
  return schemaFields(valueAt(schema, 'properties.spec'), 'spec')
}

for (const v of versions) {
  describe(`${v.kind} ${v.version}: Knative's spec fields`, () => {
    const refusals = new Map<string, string>()

    for (const [path, type] of Object.entries(v.knative)) {
      it(`${path} (${type}) is accepted, or refused at its path with a reason`, () => {
        const value = sample(path, type)
        const outcome = outcomeOf(withField(v, path))
        if (outcome.kind === 'accepted') {
          // Accepted and kept: a field the schema took but the resource dropped would be a silent gap.
          if (type === 'object') assert.ok(isRecord(valueAt(outcome.resource, path)), `${path} dropped`)
          else assert.deepEqual(valueAt(outcome.resource, path), value, `${path} not kept as given`)
          return
        }
        const [field, ...others] = outcome.fields
        assert.ok(field !== undefined)
        assert.deepEqual(others, [], `only ${path} may be refused: ${JSON.stringify(outcome.fields)}`)
        // A field inside a refused object is refused at that object, itself a Knative field.
        const at = field.path
        assert.ok(at === path || (path.startsWith(`${at}.`) && at in v.knative), `refused at ${at}, not ${path}`)
        assert.notEqual(field.message, 'unknown field', `${at}: a Knative field refused without a reason`)
        refusals.set(at, field.message)
      })
    }

    it('refuses exactly the Knative fields docs/conformance.md lists', () => {
      assert.deepEqual([...refusals.keys()].sort(), [...v.refused].sort())
    })

    it("accepts no spec field that is not Knative's, other than the listed Shoal extensions", () => {
      const extensions = SHOAL_EXTENSIONS[v.kind]
      const foreign = shoalSpecFields(v.kind).filter(path => !(path in v.knative) && !(path in extensions))
      assert.deepEqual(foreign, [])
    })
  })
}

describe('Shoal extensions', () => {
  for (const kind of ['KafkaSource', 'PingSource'] as const) {
    it(`${kind}: each is a field of Shoal's schema and of no Knative version`, () => {
      const knative = versions.filter(v => v.kind === kind).map(v => v.knative)
      const shoal = shoalSpecFields(kind)
      for (const path of Object.keys(SHOAL_EXTENSIONS[kind])) {
        assert.ok(shoal.includes(path), `${path} is not in Shoal's schema`)
        assert.ok(!knative.some(fields => path in fields), `${path} is Knative's: not an extension`)
      }
    })
  }
})
