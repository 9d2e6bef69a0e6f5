import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import type { CloudEvent, DeliveryTarget } from '../../src/delivery/index.ts'
import {
  BATCH_CONTENT_TYPE,
  Deliverer,
  DeliveryCounters,
  eventBatch,
  resolveDeliveryPolicy,
  structuredJson
} from '../../src/delivery/index.ts'
import { startSink } from './sink-server.ts'
import type { TestSink } from './sink-server.ts'

const open: { close(): Promise<void> }[] = []
after(async () => {
  await Promise.all(open.map(o => o.close()))
})

function event(id: string, data: string | Buffer, datacontenttype?: string): CloudEvent {
  return {
    attributes: {
      specversion: '1.0',
      id,
      source: '/apis/v1/namespaces/shop/kafkasources/orders#orders',
      type: 'dev.knative.kafka.event',
      ...(datacontenttype === undefined ? {} : { datacontenttype })
    },
    extensions: { key: `k-${id}` },
    data: Buffer.isBuffer(data) ? data : Buffer.from(data)
  }
}

describe('the JSON event format of a batched event', () => {
  it('data that JSON.parse takes but strict parsers refuse goes as data_base64, and its neighbours as JSON', () => {
    const values = ['{"a":1}', '{"name":"\\ud800"}', '[1e400]', '{"ok":"\\ud83d\\ude00"}']
    const batch = eventBatch(values.map((v, i) => event(`e${i}`, v, 'application/json')))
    const parsed = JSON.parse(batch.body.toString()) as Array<Record<string, unknown>>
    assert.deepEqual(
      parsed.map(e => ('data' in e ? 'data' : 'data_base64')),
      ['data', 'data_base64', 'data_base64', 'data']
    )
    assert.equal(Buffer.from(String(parsed[1]!['data_base64']), 'base64').toString(), values[1])
    // The body as a whole is what a strict parser takes: no lone surrogate, no number past a double.
    assert.ok(wellFormed(batch.body.toString()))
    assert.doesNotMatch(batch.body.toString(), /1e400|\\ud800"/)
  })

  it('JSON data is the data value itself, byte for byte', () => {
    const json = structuredJson(event('1', '{"n": 1}', 'application/json'))
    assert.ok(json.endsWith(',"data":{"n": 1}}'), json)
    assert.deepEqual(JSON.parse(json), {
      specversion: '1.0',
      id: '1',
      source: '/apis/v1/namespaces/shop/kafkasources/orders#orders',
      type: 'dev.knative.kafka.event',
      datacontenttype: 'application/json',
      key: 'k-1',
      data: { n: 1 }
    })
  })

  it('no datacontenttype means JSON; data that is not JSON goes as data_base64', () => {
    assert.deepEqual(JSON.parse(structuredJson(event('1', '[1,2]'))).data, [1, 2])
    const notJson = JSON.parse(structuredJson(event('2', 'plain words'))) as Record<string, unknown>
    assert.equal(notJson['data'], undefined)
    assert.equal(Buffer.from(notJson['data_base64'] as string, 'base64').toString(), 'plain words')
  })

  it('text is a data string; binary is data_base64; empty data is no member', () => {
    assert.equal(JSON.parse(structuredJson(event('1', 'héllo "x"', 'text/plain; charset=utf-8'))).data, 'héllo "x"')
    const bytes = Buffer.from([0xff, 0x00, 0x80])
    const binary = JSON.parse(structuredJson(event('2', bytes, 'application/octet-stream'))) as Record<string, string>
    assert.deepEqual(Buffer.from(binary['data_base64']!, 'base64'), bytes)
    const empty = JSON.parse(structuredJson(event('3', ''))) as Record<string, unknown>
    assert.ok(!('data' in empty) && !('data_base64' in empty))
  })

  it('a batch is the JSON array of its events, in order', () => {
    const batch = eventBatch([event('a', '1'), event('b', '2'), event('c', '"three"')])
    assert.deepEqual(
      (JSON.parse(batch.body.toString()) as Array<{ id: string; data: unknown }>).map(e => [e.id, e.data]),
      [
        ['a', 1],
        ['b', 2],
        ['c', 'three']
      ]
    )
  })
})

describe('Deliverer with a batch', () => {
  async function sink(status: (n: number) => number): Promise<TestSink> {
    const s = await startSink((_request, n) => ({ status: status(n), body: 'nope' }))
    open.push(s)
    return s
  }
  function target(sinkUrl: string, deadLetterUrl: string): DeliveryTarget {
    const policy = resolveDeliveryPolicy(
      { retry: 2, backoffPolicy: 'linear', backoffDelay: 'PT0.01S' },
      { uri: deadLetterUrl }
    )
    return { sourceKey: 'KafkaSource/shop/orders', sink: { uri: sinkUrl }, policy }
  }

  it('sends one batched-mode request with the batch content type; its outcome counts each event', async () => {
    const main = await sink(() => 202)
    const dls = await sink(() => 200)
    const counters = new DeliveryCounters()
    const deliverer = new Deliverer({ observer: counters })
    open.push(deliverer)
    const outcome = await deliverer.deliver(eventBatch([event('a', '1'), event('b', '2')]), target(main.url, dls.url))
    assert.equal(outcome.kind, 'delivered')
    assert.equal(main.received.length, 1)
    assert.equal(main.received[0]!.headers['content-type'], BATCH_CONTENT_TYPE)
    assert.equal(main.received[0]!.headers['ce-id'], undefined, 'no binary-mode headers')
    assert.deepEqual(
      (JSON.parse(main.received[0]!.body.toString()) as Array<{ id: string }>).map(e => e.id),
      ['a', 'b']
    )
    const counts = counters.get('KafkaSource/shop/orders')
    assert.equal(counts.delivered, 2, 'two events delivered')
    assert.equal(counts.attempts['2xx'], 1, 'in one request')
  })

  it('retries the whole batch, then dead-letters it event by event with the error extensions on each', async () => {
    const main = await sink(() => 503)
    const dls = await sink(() => 200)
    const deliverer = new Deliverer()
    open.push(deliverer)
    const sent = eventBatch([event('a', '1'), event('b', '2'), event('c', '3')])
    const outcome = await deliverer.deliver(sent, target(main.url, dls.url))
    assert.equal(outcome.kind, 'dead-lettered')
    assert.equal(main.received.length, 3, 'the first attempt and 2 retries, each the whole batch')
    for (const request of main.received) assert.deepEqual(request.body, sent.body)
    // In binary mode, in order: a dead letter sink need not speak batched mode.
    assert.deepEqual(
      dls.received.map(r => r.headers['ce-id']),
      ['a', 'b', 'c']
    )
    for (const r of dls.received) {
      assert.notEqual(r.headers['content-type'], BATCH_CONTENT_TYPE)
      assert.equal(r.headers['ce-knativeerrorcode'], '503')
      assert.equal(r.headers['ce-knativeerrordest'], main.url)
      assert.equal(Buffer.from(String(r.headers['ce-knativeerrordata']), 'base64').toString(), 'nope')
    }
  })
})

// String.prototype.isWellFormed (ES2024; the project types ES2023): no lone surrogate.
function wellFormed(text: string): boolean {
  return (text as unknown as { isWellFormed(): boolean }).isWellFormed()
}
