import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import type { KafkaRecord, MappingResult } from '../../src/kafka-source/index.ts'
import { headerExtensionName, recordToEvent } from '../../src/kafka-source/index.ts'

const source = { namespace: 'team-a', name: 'orders-source' }

function record(overrides: Partial<KafkaRecord> = {}): KafkaRecord {
  return {
    topic: 'orders',
    partition: 3,
    offset: 42n,
    key: Buffer.from('customer-7'),
    value: Buffer.from('{"id":1}'),
    headers: [],
    timestamp: 1_700_000_000_123n,
    ...overrides
  }
}

function event(result: MappingResult) {
  assert.equal(result.kind, 'event', result.kind === 'poison' ? result.reason : '')
  return result.kind === 'event' ? result : assert.fail('not an event')
}

function poison(result: MappingResult) {
  assert.equal(result.kind, 'poison')
  return result.kind === 'poison' ? result : assert.fail('not poison')
}

const ce = (name: string, value: string) => [Buffer.from(name), Buffer.from(value)] as const

describe('recordToEvent: a plain record gets Knative KafkaSource’s mapping', () => {
  it('maps id, type, source, subject, time, key and partitionkey', () => {
    const result = event(recordToEvent(record(), source))
    assert.equal(result.mode, 'mapped')
    assert.deepEqual(result.event.attributes, {
      specversion: '1.0',
      id: 'partition:3/offset:42',
      source: '/apis/v1/namespaces/team-a/kafkasources/orders-source#orders',
      type: 'dev.knative.kafka.event',
      subject: 'partition:3#42',
      time: '2023-11-14T22:13:20.123Z'
    })
    assert.deepEqual(result.event.extensions, { key: 'customer-7', partitionkey: 'customer-7' })
    assert.deepEqual(result.event.data, Buffer.from('{"id":1}'))
  })

  it('turns every header into kafkaheader<name>: lowercased, non-alphanumerics removed', () => {
    const result = event(
      recordToEvent(
        record({
          headers: [
            [Buffer.from('X-Request-ID'), Buffer.from('abc')],
            [Buffer.from('tenant_id'), Buffer.from('t1')],
            [Buffer.from('empty'), null]
          ]
        }),
        source
      )
    )
    assert.equal(result.event.extensions['kafkaheaderxrequestid'], 'abc')
    assert.equal(result.event.extensions['kafkaheadertenantid'], 't1')
    assert.equal(result.event.extensions['kafkaheaderempty'], '')
    assert.equal(headerExtensionName('Content-Type'), 'kafkaheadercontenttype')
  })

  it('accepts headers as a Map of Buffers (what @platformatic/kafka hands over)', () => {
    const headers = new Map([[Buffer.from('trace'), Buffer.from('on')]])
    assert.equal(event(recordToEvent(record({ headers }), source)).event.extensions['kafkaheadertrace'], 'on')
  })

  it('takes the content-type header as datacontenttype, and keeps it as an extension', () => {
    const result = event(recordToEvent(record({ headers: [ce('content-type', 'application/json')] }), source))
    assert.equal(result.event.attributes.datacontenttype, 'application/json')
    assert.equal(result.event.extensions['kafkaheadercontenttype'], 'application/json')
  })

  it('a key that is not UTF-8 travels as base64; a null key adds no key extension', () => {
    const binaryKey = Buffer.from([0xff, 0x00, 0xfe])
    const withBinary = event(recordToEvent(record({ key: binaryKey }), source))
    assert.equal(withBinary.event.extensions['key'], binaryKey.toString('base64'))
    const withoutKey = event(recordToEvent(record({ key: null }), source))
    assert.equal(withoutKey.event.extensions['key'], undefined)
    assert.equal(withoutKey.event.extensions['partitionkey'], undefined)
  })

  it('keeps the payload byte for byte: non-UTF-8, empty, tombstone, 1 MiB', () => {
    const bytes = Buffer.from([0x00, 0xff, 0xc3, 0x28, 0x80, 0x0a])
    assert.deepEqual(event(recordToEvent(record({ value: bytes }), source)).event.data, bytes)
    assert.equal(event(recordToEvent(record({ value: Buffer.alloc(0) }), source)).event.data.length, 0)
    assert.equal(event(recordToEvent(record({ value: null }), source)).event.data.length, 0)
    const big = Buffer.alloc(1024 * 1024, 7)
    assert.equal(event(recordToEvent(record({ value: big }), source)).event.data, big)
  })

  it('a record without a timestamp has no time attribute', () => {
    assert.equal(event(recordToEvent(record({ timestamp: -1n }), source)).event.attributes.time, undefined)
  })

  it('a timestamp past the latest Date has no time attribute, rather than failing the mapping', () => {
    // Kafka timestamps are int64: 2^62 ms is a valid one no Date holds (toISOString would throw).
    assert.equal(event(recordToEvent(record({ timestamp: 2n ** 62n }), source)).event.attributes.time, undefined)
    const latest = event(recordToEvent(record({ timestamp: 8_640_000_000_000_000n }), source)).event
    assert.equal(latest.attributes.time, '+275760-09-13T00:00:00.000Z')
  })

  it('time is the timestamp as toISOString writes it, whatever the order of records', () => {
    // Timestamps near each other (the per-second text is reused) and far apart (it is rebuilt), out of order too.
    const near = fc.integer({ min: 1_700_000_000_000, max: 1_700_000_003_000 })
    const any = fc.integer({ min: 0, max: 8_640_000_000_000_000 })
    fc.assert(
      fc.property(fc.array(fc.oneof(near, any), { minLength: 1, maxLength: 20 }), timestamps => {
        for (const ms of timestamps) {
          const time = event(recordToEvent(record({ timestamp: BigInt(ms) }), source)).event.attributes.time
          assert.equal(time, new Date(ms).toISOString())
        }
      }),
      { numRuns: 300 }
    )
  })

  it('carries traceparent and tracestate headers over as trace extensions', () => {
    const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'
    const result = event(
      recordToEvent(record({ headers: [ce('traceparent', traceparent), ce('tracestate', 'k=v')] }), source)
    )
    assert.equal(result.event.extensions['traceparent'], traceparent)
    assert.equal(result.event.extensions['tracestate'], 'k=v')
  })

  it('adds ceOverrides extensions last; they cannot rewrite context attributes', () => {
    const result = event(
      recordToEvent(record(), source, { ceOverrides: { extensions: { team: 'a', key: 'overridden', id: 'x' } } })
    )
    assert.equal(result.event.extensions['team'], 'a')
    assert.equal(result.event.extensions['key'], 'overridden')
    assert.equal(result.event.extensions['id'], undefined)
    assert.equal(result.event.attributes.id, 'partition:3/offset:42')
  })
})

describe('recordToEvent: a record that already is a CloudEvent passes through', () => {
  const binaryHeaders = [
    ce('ce_specversion', '1.0'),
    ce('ce_id', 'order-1'),
    ce('ce_source', '/shop'),
    ce('ce_type', 'com.example.order'),
    ce('ce_subject', 'o/1'),
    ce('ce_time', '2024-01-02T03:04:05Z'),
    ce('ce_tenant', 'acme'),
    ce('content-type', 'application/octet-stream'),
    ce('unrelated', 'ignored')
  ]

  it('binary mode: ce_ headers are the attributes, content-type the datacontenttype, the value the data', () => {
    const value = Buffer.from([1, 2, 3, 0xff])
    const result = event(recordToEvent(record({ headers: binaryHeaders, value }), source))
    assert.equal(result.mode, 'binary')
    assert.deepEqual(result.event.attributes, {
      specversion: '1.0',
      id: 'order-1',
      source: '/shop',
      type: 'com.example.order',
      subject: 'o/1',
      time: '2024-01-02T03:04:05Z',
      datacontenttype: 'application/octet-stream'
    })
    assert.deepEqual(result.event.extensions, { tenant: 'acme' })
    assert.deepEqual(result.event.data, value)
  })

  it('binary mode keeps an upstream traceparent and takes ceOverrides', () => {
    const headers = [...binaryHeaders, ce('ce_traceparent', 'from-event'), ce('traceparent', 'from-header')]
    const result = event(recordToEvent(record({ headers }), source, { ceOverrides: { extensions: { team: 'a' } } }))
    assert.equal(result.event.extensions['traceparent'], 'from-event')
    assert.equal(result.event.extensions['team'], 'a')
  })

  it('structured mode: the JSON event, data as JSON text', () => {
    const json = {
      specversion: '1.0',
      id: 'e-9',
      source: 'urn:shop',
      type: 'com.example.created',
      datacontenttype: 'application/json',
      priority: 3,
      urgent: true,
      data: { items: [1, 2] }
    }
    const result = event(
      recordToEvent(
        record({
          headers: [ce('content-type', 'application/cloudevents+json; charset=UTF-8')],
          value: Buffer.from(JSON.stringify(json))
        }),
        source
      )
    )
    assert.equal(result.mode, 'structured')
    assert.equal(result.event.attributes.id, 'e-9')
    assert.equal(result.event.attributes.datacontenttype, 'application/json')
    assert.deepEqual(result.event.extensions, { priority: '3', urgent: 'true' })
    assert.equal(result.event.data.toString(), '{"items":[1,2]}')
  })

  it('structured mode: data_base64 is decoded to the exact bytes; text data stays text', () => {
    const bytes = Buffer.from([0, 0xff, 0x10])
    const structured = (body: object) =>
      record({
        headers: [ce('content-type', 'application/cloudevents+json')],
        value: Buffer.from(JSON.stringify(body))
      })
    const base = { specversion: '1.0', id: '1', source: 's', type: 't' }
    const b64 = event(recordToEvent(structured({ ...base, data_base64: bytes.toString('base64') }), source))
    assert.deepEqual(b64.event.data, bytes)
    const text = event(recordToEvent(structured({ ...base, datacontenttype: 'text/plain', data: 'héllo' }), source))
    assert.equal(text.event.data.toString(), 'héllo')
    const none = event(recordToEvent(structured(base), source))
    assert.equal(none.event.data.length, 0)
    assert.equal(none.event.attributes.datacontenttype, undefined)
  })
})

describe('recordToEvent: a malformed CloudEvent is poison, never a throw', () => {
  const valid = [ce('ce_specversion', '1.0'), ce('ce_id', '1'), ce('ce_source', 's'), ce('ce_type', 't')]
  const cases: [string, KafkaRecord, RegExp][] = [
    ['a missing required attribute', record({ headers: valid.slice(0, 3) }), /type is missing/],
    ['an unsupported specversion', record({ headers: [ce('ce_specversion', '0.1'), ...valid.slice(1)] }), /0\.1/],
    ['a bad ce_ header name', record({ headers: [...valid, ce('ce_bad-name', 'x')] }), /attribute name/],
    [
      'a ce_ value that is not UTF-8',
      record({ headers: [...valid, [Buffer.from('ce_ext'), Buffer.from([0xff])]] }),
      /not UTF-8/
    ],
    ['a bad time', record({ headers: [...valid, ce('ce_time', 'yesterday')] }), /RFC 3339/],
    ['conflicting duplicates', record({ headers: [...valid, ce('ce_id', '2')] }), /twice/],
    [
      'invalid structured JSON',
      record({ headers: [ce('content-type', 'application/cloudevents+json')], value: Buffer.from('{"id":') }),
      /not valid JSON/
    ],
    [
      'a structured event missing its id',
      record({
        headers: [ce('content-type', 'application/cloudevents+json')],
        value: Buffer.from('{"specversion":"1.0","source":"s","type":"t"}')
      }),
      /id is missing/
    ],
    [
      'a batch',
      record({ headers: [ce('content-type', 'application/cloudevents-batch+json')], value: Buffer.from('[]') }),
      /JSON event format/
    ]
  ]
  for (const [what, input, reason] of cases) {
    it(what, () => {
      const result = poison(recordToEvent(input, source))
      assert.match(result.reason, reason)
      // The fallback is the plain mapping, so the dead letter sink still gets the record's coordinates and bytes.
      assert.equal(result.fallback.attributes.id, 'partition:3/offset:42')
      assert.equal(result.fallback.data, input.value)
    })
  }

  it('never throws, whatever the headers and value', () => {
    const bytes = fc.uint8Array({ maxLength: 40 }).map(a => Buffer.from(a))
    const name = fc.oneof(
      fc.constantFrom('ce_specversion', 'ce_id', 'ce_source', 'ce_type', 'ce_time', 'content-type', 'ce_X', 'k'),
      fc.string({ maxLength: 12 })
    )
    const value = fc.oneof(
      bytes,
      fc.constantFrom('1.0', 'application/cloudevents+json', 'x').map(s => Buffer.from(s)),
      fc.json().map(s => Buffer.from(s))
    )
    fc.assert(
      fc.property(fc.array(fc.tuple(name, value), { maxLength: 8 }), fc.option(value), (headers, body) => {
        const result = recordToEvent(
          record({ headers: headers.map(([n, v]) => [Buffer.from(n), v]), value: body }),
          source
        )
        assert.ok(result.kind === 'event' || result.kind === 'poison')
      }),
      { numRuns: 500 }
    )
  })
})
