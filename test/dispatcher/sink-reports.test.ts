import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { OriginFigures, SinkFlowState } from '../../src/delivery/index.ts'
import { checkMemberRecord } from '../../src/dispatcher/index.ts'
import { originReportsOf, sinkReportsOf } from '../../src/dispatcher/sink-reports.ts'
import { MAX_ORIGIN_REPORTS, MAX_SINK_REPORTS } from '../../src/store/index.ts'

function gate(sourceKey: string, inFlight: number, queued: number, latencyMs?: number): SinkFlowState {
  return { sourceKey, sink: 'http://sink:8080', adaptive: false, limit: 4, inFlight, queued, latencyMs }
}

const heartbeat = {
  id: 'dispatcher-0',
  incarnation: 3,
  ordinal: 0,
  zone: 'a',
  node: 'n',
  capacity: { consumers: 4, schedules: 100 },
  used: { consumers: 1, schedules: 0 },
  contractOffset: '7',
  startedAt: '2026-01-01T00:00:00.000Z'
}

test('a heartbeat names the busiest gates first, latency in whole ms, none left out when they fit', () => {
  const reports = sinkReportsOf([
    gate('KafkaSource/default/idle', 0, 0),
    gate('KafkaSource/default/busy', 2, 5, 12.6),
    gate('KafkaSource/default/some', 1, 0, 3.2)
  ])
  assert.equal(reports.partial, false)
  assert.deepEqual(
    reports.sinks.map(s => [s.source, s.inFlight + s.queued, s.latencyMs]),
    [
      ['KafkaSource/default/busy', 7, 13],
      ['KafkaSource/default/some', 1, 3],
      ['KafkaSource/default/idle', 0, undefined]
    ]
  )
  assert.equal('latencyMs' in reports.sinks[2]!, false)
})

test('past the cap the idlest gates are left out and the report says it is partial', () => {
  const states = Array.from({ length: MAX_SINK_REPORTS + 3 }, (_, i) => gate(`KafkaSource/default/s${i}`, i % 7, 0))
  const reports = sinkReportsOf(states)
  assert.equal(reports.sinks.length, MAX_SINK_REPORTS)
  assert.equal(reports.partial, true)
  // The three left out are among the idlest (nothing in flight), none of the busy ones.
  const named = new Set(reports.sinks.map(s => s.source))
  const left = states.filter(s => !named.has(s.sourceKey))
  assert.equal(left.length, 3)
  assert.ok(left.every(s => s.inFlight === 0))
})

test('a heartbeat of an older version, without sinks, still decodes', () => {
  const checked = checkMemberRecord(heartbeat)
  assert.equal(checked.kind, 'ok')
  assert.equal(checked.kind === 'ok' && checked.record.sinks, undefined)
})

test('a heartbeat with a flow control report keeps it; one whose report does not read keeps the rest', () => {
  const sinks = [
    { source: 'KafkaSource/default/a', sink: 'http://s:1', adaptive: true, limit: 2, inFlight: 2, queued: 9 }
  ]
  const good = checkMemberRecord({ ...heartbeat, sinks, sinksPartial: true })
  assert.ok(good.kind === 'ok')
  assert.deepEqual(good.record.sinks, sinks)
  assert.equal(good.record.sinksPartial, true)
  for (const bad of [
    'nope',
    [{ ...sinks[0], limit: -1 }],
    [{ ...sinks[0], latencyMs: 'fast' }],
    [{ ...sinks[0], adaptive: 'yes' }]
  ]) {
    const checked = checkMemberRecord({ ...heartbeat, sinks: bad, sinksPartial: true })
    assert.ok(checked.kind === 'ok', JSON.stringify(bad))
    assert.equal(checked.record.sinks, undefined)
    assert.equal(checked.record.sinksPartial, undefined)
    assert.equal(checked.record.contractOffset, '7')
  }
})

function origin(name: string, figures: Partial<OriginFigures>): OriginFigures {
  return {
    origin: name,
    proven: 2,
    window: 2,
    unproven: 0,
    waiting: 0,
    notAccepted: 0,
    connectFailures: 0,
    inFlight: 0,
    queued: 0,
    oldestInFlightMs: 0,
    resent: 0,
    ...figures
  }
}

test('a heartbeat names the sink origins, the most stalled first, with their oldest request and requests sent again', () => {
  const reports = originReportsOf([
    origin('http://idle:80', {}),
    origin('http://busy:80', { inFlight: 9, oldestInFlightMs: 40.4 }),
    origin('http://stalled:80', { inFlight: 2, queued: 30, oldestInFlightMs: 95_000.6, resent: 7, notAccepted: 5 }),
    origin('http://dropped:80', { resent: 3, notAccepted: 3 })
  ])
  assert.equal(reports.partial, false)
  assert.deepEqual(reports.origins, [
    { origin: 'http://stalled:80', inFlight: 2, oldestInFlightMs: 95_001, resent: 7, notAccepted: 5 },
    { origin: 'http://busy:80', inFlight: 9, oldestInFlightMs: 40, resent: 0, notAccepted: 0 },
    { origin: 'http://dropped:80', inFlight: 0, oldestInFlightMs: 0, resent: 3, notAccepted: 3 },
    { origin: 'http://idle:80', inFlight: 0, oldestInFlightMs: 0, resent: 0, notAccepted: 0 }
  ])
})

test('past the cap the idle origins are left out, never a stalled one, and the report says it is partial', () => {
  const figures = Array.from({ length: MAX_ORIGIN_REPORTS + 2 }, (_, i) => origin(`http://s${i}:80`, {}))
  figures.push(origin('http://zz-stalled:80', { inFlight: 1, oldestInFlightMs: 60_000 }))
  const reports = originReportsOf(figures)
  assert.equal(reports.origins.length, MAX_ORIGIN_REPORTS)
  assert.equal(reports.partial, true)
  assert.equal(reports.origins[0]?.origin, 'http://zz-stalled:80')
})

test('a heartbeat keeps its origins report; one that does not read is dropped on its own', () => {
  const origins = [{ origin: 'http://s:1', inFlight: 3, oldestInFlightMs: 12_000, resent: 2, notAccepted: 1 }]
  const sinks = [
    { source: 'KafkaSource/default/a', sink: 'http://s:1', adaptive: false, limit: 2, inFlight: 2, queued: 0 }
  ]
  const good = checkMemberRecord({ ...heartbeat, sinks, origins, originsPartial: true })
  assert.ok(good.kind === 'ok')
  assert.deepEqual(good.record.origins, origins)
  assert.equal(good.record.originsPartial, true)
  for (const bad of [
    'nope',
    [{ ...origins[0], oldestInFlightMs: 1.5 }],
    [{ ...origins[0], resent: -1 }],
    [{ ...origins[0], origin: 7 }]
  ]) {
    const checked = checkMemberRecord({ ...heartbeat, sinks, origins: bad, originsPartial: true })
    assert.ok(checked.kind === 'ok', JSON.stringify(bad))
    assert.equal(checked.record.origins, undefined)
    assert.equal(checked.record.originsPartial, undefined)
    assert.deepEqual(checked.record.sinks, sinks)
  }
})
