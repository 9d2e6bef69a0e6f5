import assert from 'node:assert/strict'
import { test } from 'node:test'
import { buildSnapshot } from '../../src/ui/index.ts'
import type { FlowControlRow, SinkOriginRow } from '../../src/api/index.ts'
import type { UiSnapshotInput, UiSourceInput } from '../../src/ui/index.ts'

function source(key: string, flow?: readonly FlowControlRow[]): UiSourceInput {
  return {
    key,
    slot: 'consumer',
    desired: 2,
    placements: [
      { podName: 'dispatcher-10', vreplicas: 1 },
      { podName: 'dispatcher-2', vreplicas: 1 }
    ],
    pending: 0,
    conditions: [{ type: 'Ready', status: 'True' }],
    ...(flow === undefined ? {} : { flow })
  }
}

function input(sources: readonly UiSourceInput[]): UiSnapshotInput {
  return {
    now: 1,
    replicaId: 'c0',
    leader: true,
    dispatchers: ['dispatcher-2', 'dispatcher-10'].map(id => ({
      id,
      zone: 'a',
      node: 'n',
      capacity: 4,
      alive: true,
      cordoned: false
    })),
    sources,
    history: new Map()
  }
}

test('the snapshot carries a source’s flow control gates, by dispatcher ordinal then sink; none when it has none', () => {
  const gate = (dispatcher: string, sink: string, limit: number): FlowControlRow => ({
    dispatcher,
    sink,
    adaptive: limit === 3,
    limit,
    inFlight: 1,
    queued: 4,
    latencyMs: 250
  })
  const snapshot = buildSnapshot(
    input([
      source('KafkaSource/default/gated', [
        gate('dispatcher-10', 'http://s:1', 2),
        gate('dispatcher-2', 'http://t:1', 3),
        gate('dispatcher-2', 'http://s:1', 3)
      ]),
      source('KafkaSource/default/plain'),
      source('KafkaSource/default/empty', [])
    ])
  )
  const byName = new Map(snapshot.sources.map(s => [s.name, s]))
  assert.deepEqual(
    byName.get('default/gated')?.flow?.map(f => [f.dispatcher, f.sink, f.limit, f.adaptive]),
    [
      ['dispatcher-2', 'http://s:1', 3, true],
      ['dispatcher-2', 'http://t:1', 3, true],
      ['dispatcher-10', 'http://s:1', 2, false]
    ]
  )
  assert.equal(byName.get('default/gated')?.flow?.[0]?.queued, 4)
  assert.equal('flow' in byName.get('default/plain')!, false)
  assert.equal('flow' in byName.get('default/empty')!, false)
})

test('the snapshot carries a source’s sink origins, by dispatcher ordinal then origin; none when it has none', () => {
  const row = (dispatcher: string, origin: string, oldestInFlightMs: number): SinkOriginRow => ({
    dispatcher,
    origin,
    inFlight: 3,
    oldestInFlightMs,
    resent: 2,
    notAccepted: 1
  })
  const stalled: UiSourceInput = {
    ...source('KafkaSource/default/stalled'),
    origins: [
      row('dispatcher-10', 'http://s:1', 95_000),
      row('dispatcher-2', 'http://t:1', 5),
      row('dispatcher-2', 'http://s:1', 40)
    ]
  }
  const snapshot = buildSnapshot(
    input([stalled, source('KafkaSource/default/plain'), { ...source('KafkaSource/default/empty'), origins: [] }])
  )
  const byName = new Map(snapshot.sources.map(s => [s.name, s]))
  assert.deepEqual(
    byName.get('default/stalled')?.origins?.map(o => [o.dispatcher, o.origin, o.oldestInFlightMs]),
    [
      ['dispatcher-2', 'http://s:1', 40],
      ['dispatcher-2', 'http://t:1', 5],
      ['dispatcher-10', 'http://s:1', 95_000]
    ]
  )
  assert.deepEqual(byName.get('default/stalled')?.origins?.[2], row('dispatcher-10', 'http://s:1', 95_000))
  assert.equal('origins' in byName.get('default/plain')!, false)
  assert.equal('origins' in byName.get('default/empty')!, false)
})
