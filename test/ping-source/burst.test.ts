import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import {
  StringPool,
  TickFeeder,
  TickHeap,
  TickLedger,
  pingRecordOf,
  pingTargetOf,
  tickEventId
} from '../../src/ping-source/index.ts'
import type { Tick } from '../../src/ping-source/index.ts'
import type { StoredPingSource } from '../../src/store/index.ts'

describe('TickHeap with many keys on one time', () => {
  it('pops a shared tick key by key, skipping keys deleted or moved meanwhile and taking keys added to it', () => {
    const heap = new TickHeap()
    for (let i = 0; i < 1_000; i++) heap.set(`k${i}`, 60_000)
    heap.set('early', 30_000)
    heap.set('late', 120_000)
    assert.equal(heap.peekTime(), 30_000)
    assert.deepEqual(heap.popDue(60_000), { key: 'early', time: 30_000 })
    const popped: string[] = []
    for (let p = heap.popDue(60_000); p; p = heap.popDue(60_000)) {
      assert.equal(p.time, p.key === 'added' ? 45_000 : 60_000)
      popped.push(p.key)
      if (p.key === 'k10') {
        heap.delete('k11') // deleted before its turn: never popped
        heap.set('k12', 120_000) // moved later: popped with that time
        heap.set('k0', 60_000) // popped already, due again: popped again
        heap.set('added', 45_000) // an earlier time, also due
      }
    }
    assert.equal(popped.length, 1_000 - 2 + 2)
    assert.ok(!popped.includes('k11') && !popped.includes('k12'))
    assert.equal(popped.filter(k => k === 'k0').length, 2)
    assert.ok(popped.includes('added'))
    assert.equal(heap.size, 2)
    assert.equal(heap.peekTime(), 120_000)
    assert.equal(heap.timeOf('k12'), 120_000)
    assert.equal(heap.has('k11'), false)
  })

  it('stays small when keys keep moving between times that never come due', () => {
    const heap = new TickHeap()
    for (let i = 0; i < 10_000; i++) heap.set('k', 1_000 + i)
    assert.equal(heap.size, 1)
    assert.equal(heap.peekTime(), 10_999)
    assert.deepEqual(heap.popDue(20_000), { key: 'k', time: 10_999 })
    assert.equal(heap.peekTime(), undefined)
  })
})

describe('TickFeeder', () => {
  const ticks = (n: number, from = 0): Tick[] =>
    Array.from({ length: n }, (_, i) => ({ key: `k${from + i}`, at: 60_000, late: false }))

  it('hands the first slice out at once and the rest one slice per turn, in order', async () => {
    const handed: string[] = []
    const turns: Array<() => void> = []
    const feeder = new TickFeeder({ handOut: t => handed.push(t.key), slice: 3, defer: run => turns.push(run) })
    feeder.push(ticks(7))
    assert.deepEqual(handed, ['k0', 'k1', 'k2'])
    assert.equal(feeder.pending, 4)
    feeder.push(ticks(1, 7)) // joins the queue behind: nothing more this turn
    assert.deepEqual(handed, ['k0', 'k1', 'k2'])
    const idle = feeder.idle()
    turns.shift()?.()
    assert.deepEqual(handed.slice(3), ['k3', 'k4', 'k5'])
    turns.shift()?.()
    assert.deepEqual(handed.slice(6), ['k6', 'k7'])
    assert.equal(feeder.pending, 0)
    await idle
    assert.equal(turns.length, 0)
  })

  it('drops what is not handed out on clear, and resolves idle', async () => {
    const handed: string[] = []
    const turns: Array<() => void> = []
    const feeder = new TickFeeder({ handOut: t => handed.push(t.key), slice: 2, defer: run => turns.push(run) })
    feeder.push(ticks(5))
    const idle = feeder.idle()
    feeder.clear()
    await idle
    for (const run of turns.splice(0)) run()
    assert.deepEqual(handed, ['k0', 'k1'])
    feeder.push(ticks(1, 9))
    assert.deepEqual(handed, ['k0', 'k1', 'k9'])
  })

  it('runs on setImmediate by default', async () => {
    const handed: string[] = []
    const feeder = new TickFeeder({ handOut: t => handed.push(t.key), slice: 100 })
    feeder.push(ticks(250))
    assert.equal(handed.length, 100)
    await feeder.idle()
    assert.equal(handed.length, 250)
  })
})

describe('TickLedger with several ticks of one schedule out', () => {
  it('is handled up to just before the oldest, whichever order they end in', () => {
    const ledger = new TickLedger()
    ledger.begin('k', 2_000)
    ledger.begin('k', 1_000)
    ledger.begin('k', 3_000)
    assert.equal(ledger.watermarkOf('k', 10_000), 999)
    ledger.end('k', 1_000)
    assert.equal(ledger.watermarkOf('k', 10_000), 1_999)
    ledger.end('k', 3_000)
    assert.equal(ledger.oldestOpen('k'), 2_000)
    ledger.end('k', 2_000)
    assert.equal(ledger.oldestOpen('k'), undefined)
    assert.equal(ledger.openKeys, 0)
  })
})

describe('PingRecord', () => {
  const stored = (
    name: string,
    spec: Record<string, unknown>,
    annotations?: Record<string, string>
  ): StoredPingSource =>
    JSON.parse(
      JSON.stringify({
        apiVersion: 'sources.knative.dev/v1',
        kind: 'PingSource',
        metadata: {
          name,
          namespace: 'ns',
          uid: `uid-${name}`,
          generation: 1,
          creationTimestamp: '2026-05-01T10:00:00.000Z',
          ...(annotations ? { annotations } : {})
        },
        spec
      })
    ) as StoredPingSource

  it('keeps what firing needs, resolves the sink, and shares strings many sources have', () => {
    const strings = new StringPool()
    const options = { serviceUrlTemplate: 'http://{name}.{namespace}.svc', strings }
    const a = pingRecordOf(
      stored(
        'a',
        {
          schedule: '* * * * *',
          timezone: 'Europe/Paris',
          contentType: 'application/json',
          data: '{"x":1}',
          sink: { ref: { apiVersion: 'v1', kind: 'Service', name: 'svc' } },
          ceOverrides: { extensions: { team: 'blue' } }
        },
        { 'shoal.dev/late-ticks': 'last', other: 'dropped' }
      ),
      42,
      options
    )
    assert.deepEqual(a, {
      offset: 42,
      namespace: 'ns',
      name: 'a',
      uid: 'uid-a',
      creationMs: Date.parse('2026-05-01T10:00:00.000Z'),
      schedule: '* * * * *',
      timezone: 'Europe/Paris',
      latePolicy: 'last',
      contentType: 'application/json',
      data: '{"x":1}',
      extensions: { team: 'blue' },
      sink: { uri: 'http://svc.ns.svc' }
    })
    const b = pingRecordOf(stored('b', { schedule: '* * * * *', sink: { uri: 'ftp://nope' } }), 43, options)
    assert.ok('unresolved' in b.sink, 'a sink that does not resolve says why')
    assert.equal(strings.size, 5) // ns, the schedule, the zone, the content type, `last` — b added nothing new
    const target = pingTargetOf('PingSource/ns/a', a.sink)
    assert.equal(target.sink.uri, 'http://svc.ns.svc')
    assert.equal(target.policy, pingTargetOf('PingSource/ns/c', { uri: 'http://c' }).policy, 'one policy for all')
  })

  it('gives the same id for a tick however it is asked', () => {
    assert.equal(tickEventId('u', 60_000), tickEventId('u', 60_000))
    assert.match(tickEventId('u', 60_000), /^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
  })
})
