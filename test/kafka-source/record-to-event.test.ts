import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import type { KafkaKeyType } from '../../src/api/index.ts'
import type { KafkaRecord, MappingResult } from '../../src/kafka-source/index.ts'
import {
  headerExtensionName,
  javaDoubleToString,
  javaFloatToString,
  keyExtensionValue,
  recordToEvent
} from '../../src/kafka-source/index.ts'

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
    assert.deepEqual(result.event.extensions, {
      key: 'customer-7',
      partitionkey: 'customer-7',
      knativekafkapartition: '3',
      knativekafkaoffset: '42'
    })
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

  it('a key that is not UTF-8 travels as base64; a null or empty key adds no key extension', () => {
    const binaryKey = Buffer.from([0xff, 0x00, 0xfe])
    const withBinary = event(recordToEvent(record({ key: binaryKey }), source))
    assert.equal(withBinary.event.extensions['key'], binaryKey.toString('base64'))
    for (const key of [null, undefined, Buffer.alloc(0)]) {
      // Knative's KeyDeserializer returns null for an empty key as for a null one.
      const withoutKey = event(recordToEvent(record({ key }), source))
      assert.equal(withoutKey.event.extensions['key'], undefined)
      assert.equal(withoutKey.event.extensions['partitionkey'], undefined)
    }
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
    assert.deepEqual(result.event.extensions, { tenant: 'acme', knativekafkapartition: '3', knativekafkaoffset: '42' })
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
    assert.deepEqual(result.event.extensions, {
      priority: '3',
      urgent: 'true',
      knativekafkapartition: '3',
      knativekafkaoffset: '42'
    })
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
      assert.equal(result.fallback.extensions['knativekafkapartition'], '3')
      assert.equal(result.fallback.extensions['knativekafkaoffset'], '42')
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

describe('recordToEvent: knativekafkapartition and knativekafkaoffset on every event, as Knative’s dispatcher adds them', () => {
  const binary = [ce('ce_specversion', '1.0'), ce('ce_id', 'b-1'), ce('ce_source', '/s'), ce('ce_type', 't')]
  const structured = (members: object) =>
    record({
      headers: [ce('content-type', 'application/cloudevents+json')],
      value: Buffer.from(JSON.stringify({ specversion: '1.0', id: 's-1', source: '/s', type: 't', ...members }))
    })
  const modes: [string, (r: Partial<KafkaRecord>) => KafkaRecord][] = [
    ['a plain record', r => record(r)],
    ['a binary-mode record', r => record({ headers: binary, ...r })],
    ['a structured-mode record', r => ({ ...structured({}), ...r })]
  ]

  for (const [what, make] of modes) {
    it(`${what}: the record's partition and offset, in decimal, offsets past 2^53 exact`, () => {
      const first = event(recordToEvent(make({ partition: 0, offset: 0n }), source)).event
      assert.equal(first.extensions['knativekafkapartition'], '0')
      assert.equal(first.extensions['knativekafkaoffset'], '0')
      const far = event(recordToEvent(make({ partition: 127, offset: 9_007_199_254_740_993n }), source)).event
      assert.equal(far.extensions['knativekafkapartition'], '127')
      assert.equal(far.extensions['knativekafkaoffset'], '9007199254740993')
      // A client that hands the offset over as a number gets the same text.
      assert.equal(event(recordToEvent(make({ offset: 42 }), source)).event.extensions['knativekafkaoffset'], '42')
    })

    it(`${what}: ceOverrides come last, over the Kafka extensions too`, () => {
      const plain = event(recordToEvent(make({}), source)).event
      assert.equal(plain.extensions['knativekafkaoffset'], '42')
      const overrides = { extensions: { knativekafkaoffset: 'mine', knativekafkapartition: 'p', team: 'a' } }
      const overridden = event(recordToEvent(make({}), source, { ceOverrides: overrides })).event
      assert.equal(overridden.extensions['knativekafkaoffset'], 'mine')
      assert.equal(overridden.extensions['knativekafkapartition'], 'p')
      assert.equal(overridden.extensions['team'], 'a')
    })
  }

  it('an event that carries its own knativekafkaoffset gets the record’s (binary and structured)', () => {
    const own = [...binary, ce('ce_knativekafkaoffset', '999'), ce('ce_knativekafkapartition', '9')]
    const fromBinary = event(recordToEvent(record({ headers: own }), source)).event
    assert.equal(fromBinary.extensions['knativekafkaoffset'], '42')
    assert.equal(fromBinary.extensions['knativekafkapartition'], '3')
    const fromStructured = event(recordToEvent(structured({ knativekafkaoffset: 999 }), source)).event
    assert.equal(fromStructured.extensions['knativekafkaoffset'], '42')
  })

  it('a record header named like them stays a kafkaheader extension and does not replace them', () => {
    const result = event(recordToEvent(record({ headers: [ce('knativekafkaoffset', '7')] }), source)).event
    assert.equal(result.extensions['kafkaheaderknativekafkaoffset'], '7')
    assert.equal(result.extensions['knativekafkaoffset'], '42')
  })
})

describe('recordToEvent: the key-type label decides how a plain record’s key reads', () => {
  const keyOf = (key: Buffer | null, keyType?: KafkaKeyType) => {
    const result = event(recordToEvent(record({ key }), source, keyType === undefined ? {} : { keyType })).event
    assert.equal(result.extensions['partitionkey'], result.extensions['key'], 'key and partitionkey agree')
    return result.extensions['key']
  }
  const bytes = (...b: number[]) => Buffer.from(b)
  const int32 = (n: number) => {
    const b = Buffer.alloc(4)
    b.writeInt32BE(n)
    return b
  }
  const float32 = (n: number) => {
    const b = Buffer.alloc(4)
    b.writeFloatBE(n)
    return b
  }
  const float64 = (n: number) => {
    const b = Buffer.alloc(8)
    b.writeDoubleBE(n)
    return b
  }

  it('string (the default): UTF-8 as text, other bytes as base64, whatever the length', () => {
    assert.equal(keyOf(Buffer.from('customer-7')), 'customer-7')
    assert.equal(keyOf(Buffer.from('customer-7'), 'string'), 'customer-7')
    assert.equal(keyOf(Buffer.from('ключ'), 'string'), 'ключ')
    // Four bytes that would be an int stay text unless the label says int.
    assert.equal(keyOf(int32(-1), 'string'), '/////w==')
    assert.equal(keyOf(int32(-1), 'int'), '-1')
    assert.equal(keyOf(Buffer.from('abcd')), 'abcd')
    assert.equal(keyOf(Buffer.from('abcd'), 'byte-array'), 'YWJjZA==')
  })

  it('int: a 4-byte key is a big-endian signed 32-bit integer in decimal', () => {
    assert.equal(keyOf(int32(42), 'int'), '42')
    assert.equal(keyOf(int32(0), 'int'), '0')
    assert.equal(keyOf(int32(-1), 'int'), '-1')
    assert.equal(keyOf(int32(2_147_483_647), 'int'), '2147483647')
    assert.equal(keyOf(int32(-2_147_483_648), 'int'), '-2147483648')
    // "abcd" is 4 bytes: read as the integer 0x61626364, as Knative does.
    assert.equal(keyOf(Buffer.from('abcd'), 'int'), String(0x61626364))
  })

  it('int: any other length is read as a string (Knative’s fallback), 8-byte longs included', () => {
    assert.equal(keyOf(Buffer.from('1234'), 'int'), String(0x31323334))
    assert.equal(keyOf(Buffer.from('7'), 'int'), '7')
    assert.equal(keyOf(Buffer.from('123'), 'int'), '123')
    assert.equal(keyOf(Buffer.from('12345'), 'int'), '12345')
    // A Kafka LongSerializer key is not an int: its 8 bytes are read as text (here valid UTF-8: NULs and 0x2a).
    assert.equal(keyOf(bytes(0, 0, 0, 0, 0, 0, 0, 42), 'int'), '\0\0\0\0\0\0\0*')
    assert.equal(keyOf(bytes(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff), 'int'), '//////////8=')
    assert.equal(keyOf(bytes(0xff, 0xfe), 'int'), '//4=')
  })

  it('float: 4 bytes are an IEEE-754 single, 8 bytes a double, written as Java writes them', () => {
    assert.equal(keyOf(float32(1.5), 'float'), '1.5')
    assert.equal(keyOf(float32(0.1), 'float'), '0.1')
    assert.equal(keyOf(float32(100), 'float'), '100.0')
    assert.equal(keyOf(float32(-2.5e-5), 'float'), '-2.5E-5')
    assert.equal(keyOf(float32(16_777_216), 'float'), '1.6777216E7')
    assert.equal(keyOf(float64(0.1), 'float'), '0.1')
    assert.equal(keyOf(float64(100), 'float'), '100.0')
    assert.equal(keyOf(float64(1e21), 'float'), '1.0E21')
    assert.equal(keyOf(float64(0.001), 'float'), '0.001')
    assert.equal(keyOf(float64(0.0001), 'float'), '1.0E-4')
    assert.equal(keyOf(float64(5e-324), 'float'), '4.9E-324')
    assert.equal(keyOf(float64(Number.NaN), 'float'), 'NaN')
    assert.equal(keyOf(float64(-Infinity), 'float'), '-Infinity')
    assert.equal(keyOf(float32(-0), 'float'), '-0.0')
  })

  it('float: any other length is read as a string', () => {
    // "1.50" is 4 bytes, so a float (0x312e3530); "1.5" is 3, so text.
    assert.equal(keyOf(Buffer.from('1.50'), 'float'), javaFloatToString(0x312e3530))
    assert.equal(keyOf(Buffer.from('1.50'), 'float'), '2.5350566E-9')
    assert.equal(keyOf(Buffer.from('1.5'), 'float'), '1.5')
    assert.equal(keyOf(Buffer.from('3.14159'), 'float'), '3.14159')
    assert.equal(keyOf(bytes(0xff, 0, 0, 0, 0, 0), 'float'), '/wAAAAAA')
    assert.equal(keyOf(Buffer.from('123456789'), 'float'), '123456789')
  })

  it('byte-array: standard base64 with padding, UTF-8 or not, any length', () => {
    assert.equal(keyOf(Buffer.from('abc'), 'byte-array'), 'YWJj')
    assert.equal(keyOf(Buffer.from('ab'), 'byte-array'), 'YWI=')
    assert.equal(keyOf(bytes(0xfb, 0xff), 'byte-array'), '+/8=')
    assert.equal(keyOf(int32(-1), 'byte-array'), '/////w==')
  })

  it('every type: a null or empty key adds no key extension', () => {
    for (const keyType of ['string', 'int', 'float', 'byte-array'] as const) {
      assert.equal(keyOf(null, keyType), undefined, keyType)
      assert.equal(keyOf(Buffer.alloc(0), keyType), undefined, keyType)
    }
  })

  it('applies to plain records only: a CloudEvent record keeps its own extensions', () => {
    const headers = [ce('ce_specversion', '1.0'), ce('ce_id', '1'), ce('ce_source', 's'), ce('ce_type', 't')]
    const result = event(recordToEvent(record({ key: int32(5), headers }), source, { keyType: 'int' })).event
    assert.equal(result.extensions['key'], undefined)
    assert.equal(keyOf(int32(5), 'int'), '5')
  })

  it('never throws, and always yields a key for a non-empty key, whatever the bytes and type', () => {
    const keyType = fc.constantFrom<KafkaKeyType>('string', 'int', 'float', 'byte-array')
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 1, maxLength: 12 }), keyType, (key, type) => {
        assert.equal(typeof keyOf(Buffer.from(key), type), 'string')
        assert.equal(keyExtensionValue(Buffer.from(key), type), keyOf(Buffer.from(key), type))
      }),
      { numRuns: 2000 }
    )
  })

  it('float keys match Java’s Float.toString and Double.toString (fixture made by a JDK)', () => {
    const fixture = readFileSync(new URL('fixtures/java-key-numbers.txt', import.meta.url), 'utf8')
    let checked = 0
    for (const line of fixture.split('\n')) {
      if (line === '') continue
      const [kind, hex = '', java] = line.split(' ')
      const key = Buffer.from(hex, 'hex')
      assert.equal(keyOf(key, 'float'), java, `${kind} ${hex}`)
      const direct = kind === 'f' ? javaFloatToString(key.readUInt32BE(0)) : javaDoubleToString(key.readBigUInt64BE(0))
      assert.equal(direct, java)
      checked++
    }
    assert.ok(checked > 1500)
  })
})
