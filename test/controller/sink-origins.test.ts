import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { SinkOriginFigures } from '../../src/api/index.ts'
import { presentSource } from '../../src/controller/presentation.ts'
import { originsOf, sinkOriginRows } from '../../src/controller/sink-origins.ts'
import type { StoredEntry, StoredSource } from '../../src/store/index.ts'
import { storedKafkaSource } from '../api/helpers.ts'

const entry = storedKafkaSource

function figures(origin: string, extra: Partial<SinkOriginFigures> = {}): SinkOriginFigures {
  return { origin, inFlight: 0, oldestInFlightMs: 0, resent: 0, notAccepted: 0, ...extra }
}

const SINK = 'http://sink.example.com' // kafkaSourceManifest's sink, http://sink.example.com/events
const DEAD_LETTER = 'http://dls.default.svc:8080'

const heartbeats: ReadonlyMap<string, readonly SinkOriginFigures[]> = new Map([
  [
    'dispatcher-1',
    [
      figures(SINK, { inFlight: 128, oldestInFlightMs: 95_000, resent: 12, notAccepted: 9 }),
      figures('http://other.example.com', { inFlight: 4, oldestInFlightMs: 200_000 })
    ]
  ],
  ['dispatcher-0', [figures(SINK, { inFlight: 3, oldestInFlightMs: 40 }), figures(DEAD_LETTER, { resent: 2 })]],
  // Sends to the sink for some other source; this one is not placed there.
  ['dispatcher-2', [figures(SINK, { inFlight: 7, oldestInFlightMs: 1_000 })]]
])

const present = (source: StoredEntry<StoredSource>) =>
  presentSource(source, 'http://{name}.{namespace}.svc:8080', undefined, undefined, [], id => heartbeats.get(id)) as {
    status: { sinkOrigins?: unknown }
  }

test('a source shows, per dispatcher it is placed on, that dispatcher’s connections to its sink origin', () => {
  assert.deepEqual(present(entry(['dispatcher-1', 'dispatcher-0'])).status.sinkOrigins, [
    { dispatcher: 'dispatcher-0', origin: SINK, inFlight: 3, oldestInFlightMs: 40, resent: 0, notAccepted: 0 },
    { dispatcher: 'dispatcher-1', origin: SINK, inFlight: 128, oldestInFlightMs: 95_000, resent: 12, notAccepted: 9 }
  ])
})

test('its dead letter sink’s origin shows too; origins of other sources’ sinks never do', () => {
  const withDeadLetter = entry(['dispatcher-0'], {
    delivery: { deadLetterSink: { ref: { apiVersion: 'v1', kind: 'Service', name: 'dls' } } }
  })
  assert.deepEqual(present(withDeadLetter).status.sinkOrigins, [
    { dispatcher: 'dispatcher-0', origin: DEAD_LETTER, inFlight: 0, oldestInFlightMs: 0, resent: 2, notAccepted: 0 },
    { dispatcher: 'dispatcher-0', origin: SINK, inFlight: 3, oldestInFlightMs: 40, resent: 0, notAccepted: 0 }
  ])
})

test('no sinkOrigins without a report from a dispatcher it is placed on (not alive, or none yet)', () => {
  assert.equal('sinkOrigins' in present(entry(['dispatcher-9'])).status, false)
  assert.equal('sinkOrigins' in present(entry([])).status, false)
  const plain = presentSource(entry(['dispatcher-0']), 'http://{name}.{namespace}') as { status: object }
  assert.equal('sinkOrigins' in plain.status, false)
})

test('origins of URIs: default ports dropped as the deliverer does, unparsable and absent ones skipped', () => {
  assert.deepEqual(
    [...originsOf(['http://a:80/x', 'https://b:8443/y?z', undefined, 'not a url', 'http://a/other'])],
    ['http://a', 'https://b:8443']
  )
  assert.deepEqual(
    sinkOriginRows([{ podName: 'dispatcher-0' }], () => [figures('http://a')], new Set()),
    []
  )
})
