import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import {
  isDispatcher,
  isKafkaSource,
  isPingSource,
  isSealedSecret,
  isSource,
  storedObjectOf
} from '../../src/store/index.ts'
import type { StoredEntry, StoredObject } from '../../src/store/index.ts'
import { encodeValue, schemaHeaders } from '../../src/store/index.ts'
import { ResourceView } from '../../src/store/resource-view.ts'

const metadata = { name: 'orders', namespace: 'default', uid: 'u-7', generation: 1, creationTimestamp: 'now' }

function object(kind: string, apiVersion: string, spec: unknown): StoredObject {
  return { apiVersion, kind, metadata, spec }
}

function entry(of: StoredObject): StoredEntry {
  return { key: `${of.kind}/default/orders`, bucket: 0, resourceVersion: '3', object: of, status: undefined }
}

const kafka = object('KafkaSource', 'sources.knative.dev/v1beta1', { topics: ['t'], consumerGroup: 'g' })
const ping = object('PingSource', 'sources.knative.dev/v1', { schedule: '* * * * *' })
const dispatcher = object('Dispatcher', 'shoal.dev/v1alpha1', { unschedulable: true })
const secret = object('Secret', 'v1', { type: 'Opaque', keys: ['k'] })

describe('the guards of stored kinds', () => {
  it('tell each kind, for an entry and for an object alike', () => {
    const cases = [
      [isKafkaSource, kafka],
      [isPingSource, ping],
      [isDispatcher, dispatcher],
      [isSealedSecret, secret]
    ] as const
    for (const [guard, match] of cases) {
      for (const candidate of [kafka, ping, dispatcher, secret]) {
        const expected = candidate === match
        assert.equal(guard(candidate), expected, `${guard.name}(${candidate.kind})`)
        assert.equal(guard(entry(candidate)), expected, `${guard.name}(entry of ${candidate.kind})`)
      }
    }
    assert.deepEqual(
      [kafka, ping, dispatcher, secret].map(o => isSource(entry(o))),
      [true, true, false, false]
    )
  })

  it('narrow an entry to its kind’s spec', () => {
    const stored = entry(kafka)
    assert.ok(isKafkaSource(stored))
    assert.equal(stored.object.spec.consumerGroup, 'g')
    const cordoned = entry(dispatcher)
    assert.ok(isDispatcher(cordoned))
    assert.equal(cordoned.object.spec.unschedulable, true)
  })
})

describe('reading the resources topic', () => {
  it('applies the kind’s defaults to a record that lacks them', () => {
    const read = storedObjectOf({ object: object('KafkaSource', 'sources.knative.dev/v1beta1', { topics: ['t'] }) })
    assert.ok(read !== undefined && isKafkaSource(read))
    assert.equal(read.spec.consumerGroup, 'knative-kafka-source-u-7')
    assert.equal(read.spec.consumers, 1)
    assert.equal(read.spec.initialOffset, 'latest')
    assert.equal(read.spec.ordering, 'ordered')
  })

  it('gives a KafkaSource record without a consumer group the group the API defaults, in the view every replica reads', () => {
    // Before, each reader fell back on its own: the dispatcher consumed as the source's key, the reconciler
    // committed initial offsets for group '' and the lag metrics skipped the source.
    const view = new ResourceView({ resources: 'r', status: 's', controllers: 'c' })
    const old = object('KafkaSource', 'sources.knative.dev/v1beta1', {
      topics: ['t'],
      consumers: 1,
      initialOffset: 'earliest',
      ordering: 'ordered'
    })
    view.apply({
      topic: 'r',
      partition: 0,
      offset: 4n,
      timestamp: 0n,
      key: Buffer.from('KafkaSource/default/orders'),
      value: encodeValue({ object: old }),
      headers: new Map([...schemaHeaders()].map(([k, v]) => [k.toString(), v]))
    })
    const read = view.get('KafkaSource/default/orders')
    assert.ok(read !== undefined && isKafkaSource(read))
    assert.equal(read.object.spec.consumerGroup, 'knative-kafka-source-u-7')
    assert.equal(read.object.spec.initialOffset, 'earliest')
  })

  it('reads a value without an object as none, and the view skips it as unreadable (it threw, stalling the reader)', () => {
    for (const value of [{}, { object: null }, { object: 'x' }, { object: { kind: 'KafkaSource' } }, null, 7]) {
      assert.equal(storedObjectOf(value), undefined, JSON.stringify(value))
    }
    const unreadable: string[] = []
    const view = new ResourceView({ resources: 'r', status: 's', controllers: 'c' }, (_record, reason) =>
      unreadable.push(reason)
    )
    const record = (offset: bigint, value: unknown) => ({
      topic: 'r',
      partition: 0,
      offset,
      timestamp: 0n,
      key: Buffer.from('KafkaSource/default/orders'),
      value: encodeValue(value),
      headers: new Map([...schemaHeaders()].map(([k, v]) => [k.toString(), v]))
    })
    view.apply(record(4n, { object: object('KafkaSource', 'sources.knative.dev/v1beta1', { topics: ['t'] }) }))
    view.apply(record(5n, { spec: {} }))
    assert.equal(unreadable.length, 1)
    assert.equal(view.get('KafkaSource/default/orders')?.resourceVersion, '4')
  })
})
