import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { ResourcesReader } from '../../src/plane/index.ts'
import type { ResourceUpdate } from '../../src/plane/index.ts'
import { encodeValue, schemaHeaders } from '../../src/store/index.ts'
import type { LogRecord } from '../../src/kafka/index.ts'

const headers = new Map([...schemaHeaders()].map(([k, v]) => [k.toString(), v]))

function record(key: string, offset: bigint, value: unknown): LogRecord {
  return {
    topic: 'resources',
    partition: 0,
    offset,
    timestamp: 0n,
    key: Buffer.from(key),
    value: encodeValue(value),
    headers
  }
}

function pingSource(name: string, spec: unknown): unknown {
  const metadata = { name, namespace: 'default', uid: `u-${name}`, generation: 1, creationTimestamp: 'now' }
  return { object: { apiVersion: 'sources.knative.dev/v1', kind: 'PingSource', metadata, spec } }
}

describe('ResourcesReader', () => {
  it('skips a record without an object and one a listener throws on, with a warning naming the key', () => {
    // Before, either threw out of the tailer's callback: it read the batch again and again, forever, and handed
    // every kind's listeners the records before the bad one each time.
    const warnings: Array<{ message: string; key: unknown }> = []
    const reader = new ResourcesReader({
      brokers: ['127.0.0.1:1'],
      dispatcherId: 'dispatcher-0',
      log: (level, message, fields) => {
        if (level === 'warn') warnings.push({ message, key: (fields as { key?: unknown } | undefined)?.key })
      }
    })
    const pings: ResourceUpdate[] = []
    const kafka: ResourceUpdate[] = []
    reader.subscribe('PingSource', update => {
      if (update.object?.spec === 'malformed') throw new Error('spec is not an object')
      pings.push(update)
    })
    reader.subscribe('KafkaSource', update => kafka.push(update))

    reader.apply(record('PingSource/default/a', 1n, pingSource('a', {})))
    assert.doesNotThrow(() => reader.apply(record('PingSource/default/b', 2n, { spec: {} })))
    assert.doesNotThrow(() => reader.apply(record('PingSource/default/c', 3n, pingSource('c', 'malformed'))))
    reader.apply(record('PingSource/default/d', 4n, pingSource('d', {})))
    reader.apply(record('KafkaSource/default/k', 5n, { object: null }))

    assert.deepEqual(
      pings.map(u => u.key),
      ['PingSource/default/a', 'PingSource/default/d']
    )
    assert.deepEqual(kafka, [])
    assert.deepEqual(
      warnings.map(w => w.key),
      ['PingSource/default/b', 'PingSource/default/c', 'KafkaSource/default/k']
    )
  })
})
