import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import {
  DEFAULT_MAX_EXCEPTIONS,
  MAX_NAMED,
  RELEASE_HOLD_MS,
  ScheduleTable,
  TickLedger,
  WatermarkBook,
  MAX_OWED,
  compactWatermark,
  heartbeatWatermark,
  readWatermark,
  releaseSchedule
} from '../../src/ping-source/index.ts'
import type { Holder } from '../../src/ping-source/index.ts'

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
    assert.deepEqual(compactWatermark(Number.NEGATIVE_INFINITY, exceptions), {}, 'never fired: nothing to say')
  })

  it('past the exception cap, keeps the lowest and lowers through to the first left out: never above the truth', () => {
    const exceptions = new Map(Array.from({ length: 10 }, (_, i) => [`k${i}`, T - 1000 * (i + 1)] as [string, number]))
    const compact = compactWatermark(T, exceptions, 3)
    assert.equal(Object.keys(compact.exceptions ?? {}).length, 3)
    const read = readWatermark(compact)!
    for (const [key, truth] of exceptions) {
      const reported = read.exceptions[key] === undefined ? read.through! : Date.parse(read.exceptions[key])
      assert.ok(reported <= truth, `${key}: reported ${iso(reported)} > handled ${iso(truth)}`)
    }
    assert.equal(readWatermark({ through: 'yesterday' }), undefined)
    assert.equal(readWatermark({ contractOffset: 7 }), undefined)
    assert.equal(readWatermark({ pending: 'PingSource/ns/a' }), undefined)
    assert.equal(readWatermark(undefined), undefined)
    assert.equal(readWatermark({ through: iso(T) })?.contractOffset, -1n, 'an older heartbeat speaks for no schedule')
  })

  it('schedules waiting on their sink never lower through for the others: past the cap they are held instead', () => {
    // Each waiting schedule holds its first tick open, a day back here. Counted as plain exceptions, more of them
    // than the cap lowered `through` a day for every schedule of the dispatcher: a crash refired a day of ticks.
    const waiting = new Set<string>()
    const exceptions = new Map<string, number>()
    for (let i = 0; i < DEFAULT_MAX_EXCEPTIONS + 10; i++) {
      waiting.add(`PingSource/t/waiting-${i}`)
      exceptions.set(`PingSource/t/waiting-${i}`, T - 86_400_000 + i * 1000)
    }
    exceptions.set('PingSource/t/slow', T - 5_000)
    const compact = compactWatermark(T, exceptions, DEFAULT_MAX_EXCEPTIONS, waiting)
    assert.equal(compact.through, iso(T))
    assert.equal(compact.exceptions?.['PingSource/t/slow'], iso(T - 5_000))
    assert.equal(Object.keys(compact.exceptions ?? {}).length, DEFAULT_MAX_EXCEPTIONS)
    assert.equal(compact.held?.length, 11)
    const held = new Set(compact.held)
    for (const [key, truth] of exceptions) {
      const reported = compact.exceptions?.[key]
      assert.ok(held.has(key) !== (reported !== undefined), `${key}: an exception or held, not both`)
      if (reported !== undefined) assert.ok(Date.parse(reported) <= truth, key)
    }

    // In a heartbeat, the held ones are named as not started: their next owner asks the holder before.
    const table = new ScheduleTable()
    table.set('PingSource/t/run', { schedule: '* * * * * *', creationMs: T - 60_000, latePolicy: 'all' }, T, T)
    table.due(T + 1_000)
    const ledger = new TickLedger()
    for (const [key, at] of exceptions) if (waiting.has(key)) ledger.begin(key, at + 1)
    const watermark = readWatermark(heartbeatWatermark(table, ledger, ['PingSource/t/new'], 9n, 0, waiting))!
    assert.equal(watermark.through, T + 1_000)
    assert.equal(watermark.partial, false)
    assert.equal(watermark.pending.size, 11)
    assert.ok(watermark.pending.has('PingSource/t/new'))
    for (const key of waiting) assert.ok(watermark.pending.has(key) !== (watermark.exceptions[key] !== undefined), key)
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
    ledger.release('gone', T - 500, 3n, 10_000)
    ledger.release('never', null, 4n, 10_000)
    assert.deepEqual(ledger.releases(5_000), {
      named: { gone: [{ through: iso(T - 500), heldSince: '3' }], never: [{ through: null, heldSince: '4' }] },
      cut: false
    })
    assert.deepEqual(ledger.releases(5_000, 1).cut, true, 'cut short: the heartbeat says so')
    assert.deepEqual(ledger.releases(10_000), { named: {}, cut: false })
    // One release per holding, newest first, at most three.
    ledger.release('back', T - 400, 5n, 10_000)
    ledger.release('back', null, 9n, 10_000)
    ledger.release('back', T - 100, 5n, 10_000)
    assert.deepEqual(
      ledger.releasesOf('back').map(r => [r.at, r.heldSince]),
      [
        [T - 100, 5n],
        [null, 9n]
      ]
    )
    for (const heldSince of [11n, 12n, 13n]) ledger.release('back', null, heldSince, 10_000)
    assert.deepEqual(
      ledger.releasesOf('back').map(r => r.heldSince),
      [13n, 12n, 11n]
    )
  })
})

describe('WatermarkBook.resolve', () => {
  const LIVENESS = 10_000
  const KEY = 'PingSource/ns/a'
  interface Beat {
    through?: number
    exceptions?: Record<string, number>
    released?: Record<string, [number | null, number]>
    pending?: string[]
    contractOffset: number
  }
  const beat = (id: string, incarnation: number, w: Beat) => ({
    id,
    incarnation,
    watermark: {
      ...(w.through === undefined ? {} : { through: iso(w.through) }),
      ...(w.exceptions ? { exceptions: mapValues(w.exceptions, iso) } : {}),
      ...(w.released
        ? {
            released: mapValues(w.released, ([at, heldSince]) => [
              { through: at === null ? null : iso(at), heldSince: String(heldSince) }
            ])
          }
        : {}),
      ...(w.pending ? { pending: w.pending } : {}),
      contractOffset: String(w.contractOffset)
    }
  })
  function mapValues<V, W>(o: Record<string, V>, f: (v: V) => W): Record<string, W> {
    return Object.fromEntries(Object.entries(o).map(([k, v]) => [k, f(v)]))
  }
  function book() {
    let local = 0
    const b = new WatermarkBook({ livenessTimeoutMs: LIVENESS, clock: () => local })
    return { b, advance: (ms: number) => (local += ms) }
  }
  const self = { id: 'dispatcher-9', incarnation: 1 }
  const from = (dispatcher: string, offset: number, incarnation = 1, leftAtMs = T): Holder => ({
    dispatcher,
    offset: BigInt(offset),
    incarnation,
    leftAtMs
  })

  it('waits for a live previous owner until its heartbeat names the release, then starts exactly there', () => {
    const { b } = book()
    b.apply({
      id: 'dispatcher-0',
      value: beat('dispatcher-0', 1, { through: T - 800, contractOffset: 5 }),
      appendTimeMs: T
    })
    assert.deepEqual(b.resolve(KEY, [from('dispatcher-0', 5)], self), { kind: 'wait', on: 'dispatcher-0' })
    b.apply({
      id: 'dispatcher-0',
      value: beat('dispatcher-0', 1, { through: T + 1_000, released: { [KEY]: [T - 400, 5] }, contractOffset: 9 }),
      appendTimeMs: T + 1_100
    })
    assert.deepEqual(b.resolve(KEY, [from('dispatcher-0', 5)], self), { kind: 'since', at: T - 400 })
  })

  it('a heartbeat from before the contract that gave the schedule says nothing of it', () => {
    const { b, advance } = book()
    // dispatcher-0 got the schedule at offset 5; its last heartbeat reflects offset 4, then it died.
    b.apply({ id: 'dispatcher-0', value: beat('dispatcher-0', 1, { through: T, contractOffset: 4 }), appendTimeMs: T })
    assert.equal(b.resolve(KEY, [from('dispatcher-0', 5)], self).kind, 'wait', 'alive: it may be starting it')
    advance(LIVENESS)
    assert.deepEqual(b.resolve(KEY, [from('dispatcher-0', 5)], self), { kind: 'unknown' })
    // … so the one before it answers.
    b.apply({
      id: 'dispatcher-1',
      value: beat('dispatcher-1', 1, { through: T, released: { [KEY]: [T - 3_000, 1] }, contractOffset: 2 }),
      appendTimeMs: T + LIVENESS
    })
    assert.deepEqual(b.resolve(KEY, [from('dispatcher-0', 5), from('dispatcher-1', 1)], self), {
      kind: 'since',
      at: T - 3_000
    })
  })

  it('takes a dead owner at its newest heartbeat: its exception, else its through', () => {
    const { b, advance } = book()
    b.apply({
      id: 'dispatcher-0',
      value: beat('dispatcher-0', 1, { through: T, exceptions: { [KEY]: T - 2_000 }, contractOffset: 5 }),
      appendTimeMs: T
    })
    b.apply({
      id: 'dispatcher-1',
      value: beat('dispatcher-1', 1, { through: T - 500, contractOffset: 7 }),
      appendTimeMs: T
    })
    advance(LIVENESS)
    assert.deepEqual(b.resolve(KEY, [from('dispatcher-0', 5)], self), { kind: 'since', at: T - 2_000 })
    assert.deepEqual(b.resolve('PingSource/ns/b', [from('dispatcher-1', 7)], self), { kind: 'since', at: T - 500 })
    // A tombstone ends it at once, and a dispatcher that never started the schedule is passed over.
    b.apply({
      id: 'dispatcher-2',
      value: beat('dispatcher-2', 1, { through: T + LIVENESS, pending: [KEY], contractOffset: 3 }),
      appendTimeMs: T + LIVENESS
    })
    b.apply({ id: 'dispatcher-2', value: 'tombstone', appendTimeMs: T + LIVENESS, tombstoneIncarnation: 1 })
    assert.deepEqual(b.resolve(KEY, [from('dispatcher-2', 3), from('dispatcher-0', 5)], self), {
      kind: 'since',
      at: T - 2_000
    })
  })

  it('a release of a schedule never started there passes to the one before; giving up takes a live one as it is', () => {
    const { b } = book()
    b.apply({
      id: 'dispatcher-0',
      value: beat('dispatcher-0', 1, { through: T, released: { [KEY]: [null, 5] }, contractOffset: 6 }),
      appendTimeMs: T
    })
    b.apply({
      id: 'dispatcher-1',
      value: beat('dispatcher-1', 1, { through: T - 700, contractOffset: 2 }),
      appendTimeMs: T
    })
    const chain = [from('dispatcher-0', 5), from('dispatcher-1', 2)]
    assert.deepEqual(b.resolve(KEY, chain, self), { kind: 'wait', on: 'dispatcher-1' })
    assert.deepEqual(b.resolve(KEY, chain, self, true), { kind: 'since', at: T - 700 })
  })

  it('a restarted dispatcher goes on from its earlier incarnation, and a later incarnation that may never have had it only bounds', () => {
    const { b } = book()
    b.apply({
      id: 'dispatcher-9',
      value: beat('dispatcher-9', 0, { through: T - 4_000, contractOffset: 8 }),
      appendTimeMs: T - 3_000
    })
    b.apply({ id: 'dispatcher-9', value: beat('dispatcher-9', 1, { through: T, contractOffset: 12 }), appendTimeMs: T })
    const own: Holder = { dispatcher: 'dispatcher-9', offset: 8n, incarnation: Infinity, leftAtMs: Infinity }
    assert.deepEqual(b.resolve(KEY, [own], self), { kind: 'since', at: T - 4_000 })
    // dispatcher-3 had it at incarnation 1 (as the leader saw when it moved); incarnation 2 started around then.
    b.apply({
      id: 'dispatcher-3',
      value: beat('dispatcher-3', 1, { through: T - 9_000, contractOffset: 4 }),
      appendTimeMs: T - 8_000
    })
    b.apply({
      id: 'dispatcher-3',
      value: beat('dispatcher-3', 2, { through: T - 100, contractOffset: 20 }),
      appendTimeMs: T - 50
    })
    b.apply({ id: 'dispatcher-3', value: 'tombstone', appendTimeMs: T, tombstoneIncarnation: 2 })
    assert.deepEqual(b.resolve(KEY, [from('dispatcher-3', 4, 1)], self), { kind: 'since', at: T - 9_000 })
    // With only the later incarnation known, its through is no answer: it may never have had the schedule.
    const { b: later } = book()
    later.apply({
      id: 'dispatcher-3',
      value: beat('dispatcher-3', 2, { through: T - 100, contractOffset: 20 }),
      appendTimeMs: T - 50
    })
    later.apply({ id: 'dispatcher-3', value: 'tombstone', appendTimeMs: T, tombstoneIncarnation: 2 })
    assert.deepEqual(later.resolve(KEY, [from('dispatcher-3', 4, 1)], self), { kind: 'unknown' })
  })

  it('a heartbeat long after the move, or one cut short, does not say that a schedule it does not name runs there', () => {
    const { b, advance } = book()
    b.apply({
      id: 'dispatcher-0',
      value: beat('dispatcher-0', 1, { through: T + 400_000, contractOffset: 9 }),
      appendTimeMs: T + 400_000
    })
    advance(LIVENESS)
    assert.deepEqual(b.resolve(KEY, [from('dispatcher-0', 5)], self), { kind: 'unknown' })
    const { b: cut, advance: later } = book()
    cut.apply({
      id: 'dispatcher-0',
      value: {
        ...beat('dispatcher-0', 1, { through: T, contractOffset: 9 }),
        watermark: { through: iso(T), contractOffset: '9', partial: true }
      },
      appendTimeMs: T
    })
    later(LIVENESS)
    assert.deepEqual(cut.resolve(KEY, [from('dispatcher-0', 5)], self), { kind: 'unknown' })
  })

  it("another holding's release neither answers for this one nor hides it: a later one ends it, an earlier one does not", () => {
    const { b, advance } = book()
    // dispatcher-0 released its holding from offset 0, then got the schedule again at offset 2: pending, alive.
    b.apply({
      id: 'dispatcher-0',
      value: beat('dispatcher-0', 1, { through: T, released: { [KEY]: [null, 0] }, pending: [KEY], contractOffset: 2 }),
      appendTimeMs: T
    })
    assert.deepEqual(b.resolve(KEY, [from('dispatcher-0', 2)], self), { kind: 'wait', on: 'dispatcher-0' })
    advance(LIVENESS)
    // Stopped: the holding from offset 0 ended long before; the one from 2 never started: ask the one before.
    assert.deepEqual(b.resolve(KEY, [from('dispatcher-0', 2)], self), { kind: 'unknown' })
    assert.deepEqual(b.resolve(KEY, [from('dispatcher-0', 0)], self), { kind: 'unknown' }, 'never started either')
  })

  it('its own release answers for itself; nothing read, nothing known', () => {
    const { b } = book()
    assert.deepEqual(b.resolve(KEY, [from('dispatcher-0', 5)], self), { kind: 'unknown' })
    b.apply({ id: 'dispatcher-9', value: beat('dispatcher-9', 1, { through: T, contractOffset: 3 }), appendTimeMs: T })
    const releases = [{ at: T - 5, heldSince: 2n, owed: [], orphaned: [] }]
    assert.deepEqual(b.resolve(KEY, [from('dispatcher-9', 2)], { ...self, releases }), { kind: 'since', at: T - 5 })
    assert.deepEqual(b.resolve(KEY, [from('dispatcher-9', 6)], { ...self, releases }), { kind: 'unknown' })
  })
})

describe('heartbeatWatermark', () => {
  it('names releases and pending schedules up to the cap, says when it cut, and stays under 1 MiB at every cap', () => {
    const table = new ScheduleTable()
    const ledger = new TickLedger()
    const key = (i: number): string => `PingSource/tenant-namespace-${i % 50}/a-longish-source-name-${i}`
    for (let i = 0; i < MAX_NAMED + 10; i++) ledger.release(key(i), T - i, BigInt(1_000_000 + i), 10_000)
    for (let i = 0; i < DEFAULT_MAX_EXCEPTIONS + 10; i++) ledger.begin(key(100_000 + i), T - 1_000 - i)
    table.set('PingSource/ns/run', { schedule: '* * * * * *', creationMs: T - 60_000, latePolicy: 'all' }, T, T)
    table.due(T + 1_000)
    const pending = Array.from({ length: MAX_NAMED + 10 }, (_, i) => key(200_000 + i))
    const watermark = heartbeatWatermark(table, ledger, pending, 123n, 0)
    assert.equal(Object.keys(watermark.released ?? {}).length, MAX_NAMED)
    assert.equal(watermark.pending?.length, MAX_NAMED)
    assert.equal(watermark.partial, true)
    assert.equal(watermark.contractOffset, '123')
    const bytes = Buffer.byteLength(JSON.stringify({ watermark }))
    assert.ok(bytes < 1_000_000, `${bytes} bytes`)
    const small = heartbeatWatermark(table, new TickLedger(), [], 7n, 0)
    assert.equal(small.partial, undefined)
    assert.deepEqual(readWatermark(small)?.pending, new Set())
  })
})

describe('releaseSchedule', () => {
  const every = { schedule: '* * * * * *', creationMs: T - 60_000, latePolicy: 'all' as const }

  it('with a tick in flight releases at once past it, naming it owed until it is answered: nothing is fired twice', () => {
    const table = new ScheduleTable()
    const ledger = new TickLedger()
    const key = 'PingSource/ns/a'
    table.set(key, every, T - 1, T - 1)
    const [tick] = table.due(T).ticks
    ledger.begin(key, tick!.at)
    releaseSchedule(table, ledger, key, 7n, T + 100, [tick!.at])
    assert.equal(table.has(key), false, 'it fires no more')
    const during = heartbeatWatermark(table, ledger, [], 9n, T + 100)
    assert.deepEqual(during.released, { [key]: [{ through: iso(T), heldSince: '7', owed: [iso(T)] }] })
    assert.equal(during.exceptions, undefined)
    assert.equal(ledger.settleOwed(key, tick!.at, true), true)
    assert.deepEqual(heartbeatWatermark(table, ledger, [], 9n, T + 200).released, {
      [key]: [{ through: iso(T), heldSince: '7' }]
    })
    // Nothing in flight: released at once; a holding never started: null, beside the one before.
    table.set('b', every, T, T)
    releaseSchedule(table, ledger, 'b', 8n, T, [])
    releaseSchedule(table, ledger, 'b', 11n, T, [])
    assert.deepEqual(ledger.releasesOf('b'), [
      { at: null, heldSince: 11n, until: T + RELEASE_HOLD_MS, owed: [], orphaned: [] },
      { at: T, heldSince: 8n, until: T + RELEASE_HOLD_MS, owed: [], orphaned: [] }
    ])
  })

  it('names an aborted owed tick orphaned, keeps a release with owed ticks past its hold, and owes at most MAX_OWED', () => {
    const table = new ScheduleTable()
    const ledger = new TickLedger()
    const key = 'PingSource/ns/c'
    table.set(key, every, T - 1, T - 1)
    const ticks = table.due(T + (MAX_OWED + 4) * 1000).ticks.map(t => t.at)
    for (const at of ticks) ledger.begin(key, at)
    // All sent but the newest two: the release is below the first not sent, and owes at most MAX_OWED.
    releaseSchedule(table, ledger, key, 3n, T, ticks.slice(0, -2))
    const [release] = ledger.releasesOf(key)
    assert.equal(release!.owed.length, MAX_OWED)
    assert.equal(release!.at, ticks[MAX_OWED]! - 1)
    ledger.settleOwed(key, ticks[0]!, false)
    const late = heartbeatWatermark(table, ledger, [], 9n, T + RELEASE_HOLD_MS + 1)
    const named = late.released?.[key]?.[0]
    assert.deepEqual(named?.orphaned, [iso(ticks[0]!)], 'aborted: its next owner fires it')
    assert.equal(named?.owed?.length, MAX_OWED - 1, 'still named past the hold: ticks are owed')
    for (const at of ticks.slice(1, MAX_OWED)) ledger.settleOwed(key, at, true)
    assert.equal(heartbeatWatermark(table, ledger, [], 9n, T + RELEASE_HOLD_MS + 1).released, undefined)
  })
})

describe('WatermarkBook and owed ticks', () => {
  const KEY = 'PingSource/ns/owed'
  const owedBeat = (incarnation: number, release: Record<string, unknown>) => ({
    id: 'dispatcher-0',
    incarnation,
    watermark: { through: iso(T + 10_000), released: { [KEY]: [release] }, contractOffset: '5' }
  })
  const holder: Holder = { dispatcher: 'dispatcher-0', offset: 2n, incarnation: 1, leftAtMs: T }
  const self = { id: 'dispatcher-1', incarnation: 1 }
  /** A book whose dispatcher-0 released holding 2 through T + 3 s, owing the ticks at T + 1 s and T + 2 s. */
  const bookOwing = (clock: () => number): WatermarkBook => {
    const b = new WatermarkBook({ livenessTimeoutMs: 10_000, clock })
    const owed = [iso(T + 1_000), iso(T + 2_000)]
    b.apply({
      id: 'dispatcher-0',
      value: owedBeat(1, { through: iso(T + 3_000), heldSince: '2', owed }),
      appendTimeMs: T
    })
    return b
  }

  it('a live holder: start past its owed ticks and watch them; answered ones end, orphaned ones fire here', () => {
    let now = 0
    const b = bookOwing(() => now)
    const found = b.resolve(KEY, [holder], self)
    assert.deepEqual(found, {
      kind: 'since',
      at: T + 3_000,
      owed: { dispatcher: 'dispatcher-0', incarnation: 1, heldSince: 2n, ticks: [T + 1_000, T + 2_000] }
    })
    if (found.kind !== 'since' || found.owed === undefined) return
    assert.deepEqual(b.owedNow(KEY, found.owed), { answered: [], fire: [] })
    const next = { through: iso(T + 3_000), heldSince: '2', orphaned: [iso(T + 2_000)] }
    b.apply({ id: 'dispatcher-0', value: owedBeat(1, next), appendTimeMs: T + 2_000 })
    now = 2_000
    assert.deepEqual(b.owedNow(KEY, found.owed), { answered: [T + 1_000], fire: [T + 2_000] })
  })

  it('a holder that stopped: start below its owed ticks; one that stops while watched: fire what it still owed', () => {
    let now = 0
    const b = bookOwing(() => now)
    const found = b.resolve(KEY, [holder], self)
    if (found.kind !== 'since' || found.owed === undefined) return assert.fail('watch expected')
    now = 60_000
    b.apply({ id: 'dispatcher-9', value: { id: 'dispatcher-9', incarnation: 1 }, appendTimeMs: T + 60_000 })
    assert.deepEqual(b.owedNow(KEY, found.owed), { answered: [], fire: [T + 1_000, T + 2_000] })
    assert.deepEqual(b.resolve(KEY, [holder], self), { kind: 'since', at: T + 999 }, 'stopped: from below them')
  })
})
