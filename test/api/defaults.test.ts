import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { DEFAULT_SCHEDULE, SPEC_DEFAULTS, validateResource, withStoredDefaults } from '../../src/api/index.ts'

const meta = { name: 'orders', namespace: 'default', uid: 'u-1', generation: 1, creationTimestamp: 'now' }

describe('withStoredDefaults: the one defaulting of a stored object', () => {
  it('gives a KafkaSource without a consumer group the API’s default, knative-kafka-source-<uid>', () => {
    const object = { kind: 'KafkaSource', metadata: meta, spec: { topics: ['t'], consumers: 2 } }
    const defaulted = withStoredDefaults(object)
    assert.deepEqual(defaulted.spec, {
      topics: ['t'],
      consumers: 2,
      initialOffset: 'latest',
      ordering: 'ordered',
      consumerGroup: 'knative-kafka-source-u-1'
    })
    assert.deepEqual(object.spec, { topics: ['t'], consumers: 2 }, 'the object it was given is left as it was')
  })

  it('keeps every field that is set, and returns the object itself when nothing is missing', () => {
    const spec = { consumerGroup: 'mine', consumers: 0, initialOffset: 'earliest', ordering: 'unordered' }
    const object = { kind: 'KafkaSource', metadata: meta, spec }
    assert.equal(withStoredDefaults(object), object)
  })

  it('defaults a PingSource’s schedule and a Dispatcher’s cordon, and leaves other kinds alone', () => {
    assert.deepEqual(withStoredDefaults({ kind: 'PingSource', metadata: meta, spec: {} }).spec, {
      schedule: DEFAULT_SCHEDULE
    })
    assert.deepEqual(withStoredDefaults({ kind: 'Dispatcher', metadata: meta, spec: {} }).spec, {
      unschedulable: false
    })
    const secret = { kind: 'Secret', metadata: meta, spec: { type: 'Opaque', keys: [] } }
    assert.equal(withStoredDefaults(secret), secret)
    const noSpec = { kind: 'KafkaSource', metadata: meta, spec: undefined }
    assert.equal(withStoredDefaults(noSpec), noSpec)
  })

  it('applies the same defaults validateResource does', () => {
    const kafka = validateResource({
      apiVersion: 'sources.knative.dev/v1beta1',
      kind: 'KafkaSource',
      metadata: { name: 'k' },
      spec: { bootstrapServers: ['b:9092'], topics: ['t'], sink: { uri: 'http://s' } }
    })
    const ping = validateResource({
      apiVersion: 'sources.knative.dev/v1',
      kind: 'PingSource',
      metadata: { name: 'p' },
      spec: { sink: { uri: 'http://s' } }
    })
    for (const [field, value] of Object.entries(SPEC_DEFAULTS['KafkaSource']!)) {
      assert.equal((kafka.spec as unknown as Record<string, unknown>)[field], value, field)
    }
    assert.equal(ping.kind === 'PingSource' && ping.spec.schedule, SPEC_DEFAULTS['PingSource']!['schedule'])
  })
})
