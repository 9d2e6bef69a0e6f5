import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { TickLedger, WatermarkBook, compactWatermark, readWatermark } from '../../src/ping/index.ts'

const iso = (ms: number): string => new Date(ms).toISOString()
const T = Date.parse('2024-05-01T10:00:00Z')

describe('compactWatermark', () => {
  it('carries through, and an exception only for schedules handled less far', () => {
    const exceptions = new Map([
      ['PingSource/ns/slow', T - 60_000],
      ['PingSource/ns/ahead', T + 5_000]
    ])
    assert.deepEqual(compactWatermark(T, exceptions), {
      through: iso(T),
      exceptions: { 'PingSource/ns/slow': iso(T - 60_000) }
    })
    assert.deepEqual(compactWatermark(T, new Map()), { through: iso(T) })
  })

  it('past the exception cap, keeps the lowest and lowers through to the first left out: never above the truth', () => {
    const exceptions = new Map(Array.from({ length: 10 }, (_, i) => [`k${i}`, T - 1000 * (i + 1)] as [string, number]))
    const compact = compactWatermark(T, exceptions, 3)
    assert.equal(Object.keys(compact.exceptions ?? {}).length, 3)
    const read = readWatermark(compact)!
    for (const [key, truth] of exceptions) {
      const reported = read.exceptions[key] === undefined ? read.through : Date.parse(read.exceptions[key]!)
      assert.ok(reported <= truth, `${key}: reported ${iso(reported)} > handled ${iso(truth)}`)
    }
    assert.equal(readWatermark({ through: 'yesterday' }), undefined)
    assert.equal(readWatermark(undefined), undefined)
  })
})

describe('TickLedger', () => {
  it('a schedule with ticks out is handled only up to just before its oldest; a release is held, then expires', () => {
    const ledger = new TickLedger()
    ledger.begin('a', T - 2000)
    ledger.begin('a', T - 1000)
    assert.equal(ledger.watermarkOf('a', T), T - 2001)
    ledger.end('a', T - 2000)
    assert.equal(ledger.watermarkOf('a', T), T - 1001)
    ledger.end('a', T - 1000)
    assert.equal(ledger.watermarkOf('a', T), T)
    ledger.release('gone', T - 500, 10_000)
    assert.deepEqual([...ledger.exceptions(T, 5_000)], [['gone', T - 500]])
    assert.deepEqual([...ledger.exceptions(T, 10_000)], [])
    ledger.release('back', T - 400, 10_000)
    assert.equal(ledger.reclaim('back'), T - 400)
    assert.equal(ledger.reclaim('back'), undefined)
  })
})

describe('WatermarkBook', () => {
  const LIVENESS = 10_000
  const beat = (id: string, incarnation: number, through: number, exceptions?: Record<string, number>) => ({
    id,
    incarnation,
    watermark: {
      through: iso(through),
      ...(exceptions ? { exceptions: Object.fromEntries(Object.entries(exceptions).map(([k, v]) => [k, iso(v)])) } : {})
    }
  })

  function book() {
    let local = 0
    const b = new WatermarkBook({ livenessTimeoutMs: LIVENESS, clock: () => local })
    return { b, advance: (ms: number) => (local += ms) }
  }
  const self = { id: 'dispatcher-9', incarnation: 1 }

  it('takes the watermark of the dispatcher that died, not of the ones still alive', () => {
    const { b } = book()
    b.apply({ id: 'dispatcher-0', value: beat('dispatcher-0', 1, T - 12_000), appendTimeMs: T - 11_000 })
    b.apply({ id: 'dispatcher-1', value: beat('dispatcher-1', 1, T - 1_000), appendTimeMs: T })
    assert.equal(b.sinceFor('PingSource/ns/a', self), T - 12_000)
  })

  it('an explicit exception wins over through, and a live dispatcher releasing a schedule is heard', () => {
    const { b } = book()
    b.apply({
      id: 'dispatcher-0',
      value: beat('dispatcher-0', 1, T - 12_000, { 'PingSource/ns/a': T - 70_000 }),
      appendTimeMs: T - 11_000
    })
    b.apply({
      id: 'dispatcher-1',
      value: beat('dispatcher-1', 1, T - 1_000, { 'PingSource/ns/b': T - 5_000 }),
      appendTimeMs: T
    })
    assert.equal(b.sinceFor('PingSource/ns/a', self), T - 70_000)
    assert.equal(b.sinceFor('PingSource/ns/b', self), T - 12_000, 'the lower of the dead one and the explicit one')
  })

  it('ignores dispatchers that stopped long before the last ones, and remembers one after it left', () => {
    const { b } = book()
    b.apply({ id: 'dispatcher-5', value: beat('dispatcher-5', 1, T - 3_600_000), appendTimeMs: T - 3_600_000 })
    b.apply({ id: 'dispatcher-0', value: beat('dispatcher-0', 1, T - 2_000), appendTimeMs: T - 1_500 })
    b.apply({ id: 'dispatcher-0', value: 'tombstone', appendTimeMs: T - 1_000, tombstoneIncarnation: 1 })
    assert.equal(b.sinceFor('PingSource/ns/a', self), T - 2_000)
  })

  it('a restarted dispatcher takes its previous incarnation for its own, not its current one', () => {
    const { b } = book()
    b.apply({ id: 'dispatcher-9', value: beat('dispatcher-9', 0, T - 4_000), appendTimeMs: T - 3_000 })
    b.apply({ id: 'dispatcher-9', value: { id: 'dispatcher-9', incarnation: 1 }, appendTimeMs: T - 100 })
    b.apply({ id: 'dispatcher-9', value: beat('dispatcher-9', 1, T), appendTimeMs: T })
    assert.equal(b.sinceFor('PingSource/ns/a', self), T - 4_000)
  })

  it('takes the through of a live dispatcher the contract says it moved from, until that one names the schedule', () => {
    const { b } = book()
    const moved = [{ dispatcher: 'dispatcher-0', atMs: T - 600 }]
    b.apply({ id: 'dispatcher-0', value: beat('dispatcher-0', 1, T - 800), appendTimeMs: T - 500 })
    b.apply({ id: 'dispatcher-1', value: beat('dispatcher-1', 1, T - 300), appendTimeMs: T - 200 })
    // Live, not yet released in a heartbeat: its through (it handled every tick up to there).
    assert.equal(b.sinceFor('PingSource/ns/a', self, moved), T - 800)
    // Another live dispatcher's through says nothing of a schedule that did not come from it.
    assert.equal(b.sinceFor('PingSource/ns/a', self), undefined)
    // Once it gave the schedule up, its heartbeat names the point, lower than its through.
    b.apply({
      id: 'dispatcher-0',
      value: beat('dispatcher-0', 1, T + 1_000, { 'PingSource/ns/a': T - 400 }),
      appendTimeMs: T + 1_100
    })
    assert.equal(b.sinceFor('PingSource/ns/a', self, moved), T - 400)
  })

  it("does not take a live mover's through once its release may have left its heartbeats", () => {
    const { b } = book()
    const moved = [{ dispatcher: 'dispatcher-0', atMs: T }]
    // It released the schedule at T + 100, and its heartbeats carried that for the hold; this one, 70 s on, no
    // longer does: its through is past ticks nobody fired.
    b.apply({ id: 'dispatcher-0', value: beat('dispatcher-0', 1, T + 70_000), appendTimeMs: T + 70_100 })
    assert.equal(b.sinceFor('PingSource/ns/a', self, moved), undefined)
    // Within the hold, the release is there and wins.
    const { b: early } = book()
    early.apply({
      id: 'dispatcher-0',
      value: beat('dispatcher-0', 1, T + 30_000, { 'PingSource/ns/a': T + 100 }),
      appendTimeMs: T + 30_100
    })
    assert.equal(early.sinceFor('PingSource/ns/a', self, moved), T + 100)
  })

  it('goes back along a chain of moves: a mover that never started the schedule does not hide the one before', () => {
    const { b } = book()
    // Moved 0 → 1 at T, then 1 → 9 at T + 1 s, before dispatcher-1 started it and before dispatcher-0's heartbeat
    // with its release (at T + 100) was out: dispatcher-0's last word is a heartbeat from T + 50, schedule in hand.
    const moved = [
      { dispatcher: 'dispatcher-1', atMs: T + 1_000 },
      { dispatcher: 'dispatcher-0', atMs: T }
    ]
    b.apply({ id: 'dispatcher-0', value: beat('dispatcher-0', 1, T + 50), appendTimeMs: T + 60 })
    b.apply({ id: 'dispatcher-1', value: beat('dispatcher-1', 1, T + 1_500), appendTimeMs: T + 1_600 })
    assert.equal(b.sinceFor('PingSource/ns/a', self, moved), T + 50)
    assert.equal(b.sinceFor('PingSource/ns/a', self, moved.slice(0, 1)), T + 1_500, 'the last mover alone would skip')
  })

  it('knows nothing before it has read anything, or when nobody stopped and nobody released the schedule', () => {
    const { b, advance } = book()
    assert.equal(b.sinceFor('PingSource/ns/a', self), undefined)
    b.apply({ id: 'dispatcher-1', value: beat('dispatcher-1', 1, T), appendTimeMs: T })
    assert.equal(b.sinceFor('PingSource/ns/a', self), undefined)
    // Silent for longer than two heartbeats (on the broker's clock): it stopped.
    advance(LIVENESS)
    assert.equal(b.sinceFor('PingSource/ns/a', self), T)
  })
})
