import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import type { CloudEvent } from '../../src/delivery/index.ts'
import { eventBatch, structuredJson } from '../../src/delivery/index.ts'
import { referenceBatchBody, referenceStructuredJson } from './event-batch-reference.ts'

// The batch body is written directly (no object per event, no JSON.stringify of the whole): it must be the very
// bytes the object-graph encoding made, for any event — checked against that encoding, kept as the reference.

const text = fc.oneof(
  fc.string(),
  fc.string({ unit: 'grapheme' }),
  // Any code point, lone surrogates included (JSON.stringify escapes those).
  fc.string({ unit: 'binary' }),
  fc.constantFrom('', '"', '\\', '\u0000\n\t\u001f', 'héllo "x"', '\u2028\u2029', 'k=v,a=b', '\ud800', '😀')
)

// Extension names are lowercase a-z0-9 (names made of digits are ordered first by a JSON object), and may collide
// with attribute names or with `data` / `data_base64`. `constructor` has a test of its own (below).
const extensionName = fc.oneof(
  fc.stringMatching(/^[a-z0-9]{1,12}$/).filter(name => name !== 'constructor'),
  fc.constantFrom('key', 'partitionkey', 'id', 'subject', 'time', 'data', 'data_base64', '0', '7', '42', '1a')
)

const contentType = fc.oneof(
  fc.constant(undefined),
  fc.constantFrom(
    'application/json',
    'application/json; charset=utf-8',
    ' Application/JSON ',
    'application/cloudevents+json',
    'text/json',
    'text/plain',
    'TEXT/Plain; charset=utf-8',
    'text/csv',
    'application/octet-stream',
    'image/png',
    ''
  ),
  text
)

const jsonText = fc.tuple(fc.jsonValue(), fc.constantFrom(undefined, 0, 2, '\t')).map(([value, space]) => {
  const json = JSON.stringify(value, null, space)
  return space === undefined ? json : ` \n${json}\r\n`
})

const data = fc.oneof(
  fc.constant(Buffer.alloc(0)),
  jsonText.map(json => Buffer.from(json)),
  // Not JSON, though it may start like it: `{` then anything, `tru`, a number and more.
  fc
    .tuple(fc.constantFrom('{', '[', '"', 't', '-', '1', ' ', ''), text)
    .map(([start, rest]) => Buffer.from(start + rest)),
  fc.uint8Array({ maxLength: 300 }).map(bytes => Buffer.from(bytes)),
  // Invalid UTF-8 behind a JSON-looking start.
  fc
    .uint8Array({ maxLength: 40 })
    .map(bytes => Buffer.concat([Buffer.from('{"a":"'), Buffer.from([0xff, 0xfe]), bytes]))
)

const event: fc.Arbitrary<CloudEvent> = fc
  .record(
    {
      id: text,
      source: text,
      type: text,
      datacontenttype: contentType,
      dataschema: text,
      subject: text,
      time: text
    },
    { requiredKeys: ['id', 'source', 'type'] }
  )
  .chain(attributes =>
    // Attributes in any order, as a passthrough event may carry them; undefined ones are no attribute.
    fc
      .shuffledSubarray(Object.entries(attributes), { minLength: Object.keys(attributes).length })
      .map(entries => Object.fromEntries([['specversion', '1.0'], ...entries]) as unknown as CloudEvent['attributes'])
  )
  .chain(attributes =>
    fc.record({
      attributes: fc.constant(attributes),
      extensions: fc.dictionary(extensionName, text, { maxKeys: 6 }),
      data
    })
  )

describe('batch encoding: the same bytes as the object-graph encoding', () => {
  it('for any events: keys, extensions, JSON, text and binary data, unicode, invalid JSON', () => {
    fc.assert(
      fc.property(fc.array(event, { maxLength: 8 }), events => {
        const body = eventBatch(events).body
        const reference = referenceBatchBody(events)
        assert.equal(body.toString('utf8'), reference.toString('utf8'))
        assert.ok(body.equals(reference))
        assert.deepEqual(JSON.parse(body.toString('utf8')), JSON.parse(reference.toString('utf8')))
        for (const e of events) assert.equal(structuredJson(e), referenceStructuredJson(e))
      }),
      { numRuns: 2_000 }
    )
  })

  it('a body bigger than the scratch buffer, and one past what it keeps, then a small one', () => {
    const big = (id: string, bytes: number, fill: number): CloudEvent => ({
      attributes: { specversion: '1.0', id, source: '/s', type: 't' },
      extensions: { key: id },
      data: Buffer.alloc(bytes, fill)
    })
    for (const events of [
      [big('a', 300 * 1024, 1)],
      Array.from({ length: 5 }, (_, i) => big(`b${i}`, 1024 * 1024, i)),
      [big('c', 10, 2), big('d', 0, 0)]
    ]) {
      assert.ok(eventBatch(events).body.equals(referenceBatchBody(events)))
    }
  })

  it('a body stays as it was written when the next batch is encoded', () => {
    const one = (id: string, value: string): CloudEvent => ({
      attributes: { specversion: '1.0', id, source: '/s', type: 't', datacontenttype: 'text/plain' },
      extensions: {},
      data: Buffer.from(value)
    })
    const first = eventBatch([one('1', 'first')])
    const copy = Buffer.from(first.body)
    eventBatch([one('2', 'second, and longer than the first')])
    assert.ok(first.body.equals(copy))
    assert.deepEqual(JSON.parse(first.body.toString('utf8')), [
      { specversion: '1.0', id: '1', source: '/s', type: 't', datacontenttype: 'text/plain', data: 'first' }
    ])
  })

  it('an extension named `constructor` is sent (the object-graph encoding lost it: `in` saw Object.prototype)', () => {
    const e: CloudEvent = {
      attributes: { specversion: '1.0', id: '1', source: '/s', type: 't' },
      extensions: { constructor: 'c', key: 'k' },
      data: Buffer.alloc(0)
    }
    assert.deepEqual(JSON.parse(eventBatch([e]).body.toString('utf8')), [
      { specversion: '1.0', id: '1', source: '/s', type: 't', constructor: 'c', key: 'k' }
    ])
    assert.equal(Object.hasOwn(JSON.parse(referenceStructuredJson(e)) as object, 'constructor'), false)
  })
})
