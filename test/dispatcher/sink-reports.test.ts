import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { SinkFlowState } from '../../src/delivery/index.ts'
import { checkMemberRecord } from '../../src/dispatcher/index.ts'
import { sinkReportsOf } from '../../src/dispatcher/sink-reports.ts'
import { MAX_SINK_REPORTS } from '../../src/store/index.ts'

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
