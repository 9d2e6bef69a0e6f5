import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import {
  CronTicks,
  LATE_EXTENSION,
  PING_EVENT_TYPE,
  PingEventBuilder,
  ScheduleTable,
  TickHeap,
  TickTimer,
  latePolicyOf,
  tickEventId
} from '../../src/ping-source/index.ts'
import type { ScheduleSpec } from '../../src/ping-source/index.ts'

const at = (iso: string): number => Date.parse(iso)
const isos = (ticks: readonly number[]): string[] => ticks.map(t => new Date(t).toISOString())

describe('CronTicks', () => {
  it('reads 5-field schedules in minutes and 6-field ones with seconds first', () => {
    const minutes = new CronTicks('*/15 * * * *', undefined)
    assert.equal(isos([minutes.nextAfter(at('2024-05-01T10:07:30Z'))])[0], '2024-05-01T10:15:00.000Z')
    const seconds = new CronTicks('*/2 * * * * *', undefined)
    assert.equal(isos([seconds.nextAfter(at('2024-05-01T10:07:31.500Z'))])[0], '2024-05-01T10:07:32.000Z')
    // Strictly after: a tick is never returned twice.
    assert.equal(isos([seconds.nextAfter(at('2024-05-01T10:07:32Z'))])[0], '2024-05-01T10:07:34.000Z')
  })

  it('fires at the local time of its IANA zone', () => {
    const ny = new CronTicks('0 9 * * *', 'America/New_York')
    // 09:00 EDT (UTC-4) in May, 09:00 EST (UTC-5) in January.
    assert.equal(isos([ny.nextAfter(at('2024-05-01T00:00:00Z'))])[0], '2024-05-01T13:00:00.000Z')
    assert.equal(isos([ny.nextAfter(at('2024-01-10T00:00:00Z'))])[0], '2024-01-10T14:00:00.000Z')
    const kolkata = new CronTicks('30 0 12 * * *', 'Asia/Kolkata')
    assert.equal(isos([kolkata.nextAfter(at('2024-05-01T00:00:00Z'))])[0], '2024-05-01T06:30:30.000Z')
  })

  it('daylight saving: a time skipped in spring fires an hour later that day, a repeated time in autumn fires once', () => {
    // Europe/Paris: 2024-03-31 02:00 CET -> 03:00 CEST; 2024-10-27 03:00 CEST -> 02:00 CET.
    const daily = new CronTicks('30 2 * * *', 'Europe/Paris')
    assert.deepEqual(isos(daily.ticksIn(at('2024-03-30T12:00:00Z'), at('2024-04-01T12:00:00Z'), 10).ticks), [
      '2024-03-31T01:30:00.000Z', // 03:30 CEST: 02:30 did not exist
      '2024-04-01T00:30:00.000Z'
    ])
    assert.deepEqual(isos(daily.ticksIn(at('2024-10-26T12:00:00Z'), at('2024-10-28T12:00:00Z'), 10).ticks), [
      '2024-10-27T00:30:00.000Z', // the first 02:30 (CEST); the second (CET) does not fire again
      '2024-10-28T01:30:00.000Z'
    ])
    // An hourly schedule keeps one tick per real hour through the autumn change.
    const hourly = new CronTicks('0 * * * *', 'Europe/Paris')
    assert.deepEqual(isos(hourly.ticksIn(at('2024-10-26T23:30:00Z'), at('2024-10-27T02:30:00Z'), 10).ticks), [
      '2024-10-27T00:00:00.000Z',
      '2024-10-27T01:00:00.000Z',
      '2024-10-27T02:00:00.000Z'
    ])
  })

  it('ticksIn gives the newest ticks of a long gap, and says when it left older ones out', () => {
    const everySecond = new CronTicks('* * * * * *', undefined)
    const gap = everySecond.ticksIn(at('2024-05-01T10:00:00Z'), at('2024-05-01T11:00:00Z'), 3)
    assert.deepEqual(isos(gap.ticks), [
      '2024-05-01T10:59:58.000Z',
      '2024-05-01T10:59:59.000Z',
      '2024-05-01T11:00:00.000Z'
    ])
    assert.equal(gap.truncated, true)
    const short = everySecond.ticksIn(at('2024-05-01T10:00:00Z'), at('2024-05-01T10:00:02.500Z'), 3)
    assert.deepEqual(isos(short.ticks), ['2024-05-01T10:00:01.000Z', '2024-05-01T10:00:02.000Z'])
    assert.equal(short.truncated, false)
    assert.deepEqual(everySecond.ticksIn(5_000, 5_000, 3).ticks, [])
  })
})

describe('TickHeap', () => {
  it('pops in time order through random sets, moves and deletes', () => {
    let seed = 7
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31
    const heap = new TickHeap()
    const model = new Map<string, number>()
    for (let i = 0; i < 5_000; i++) {
      const key = `k${Math.floor(random() * 500)}`
      const r = random()
      if (r < 0.6) {
        const time = Math.floor(random() * 10_000)
        heap.set(key, time)
        model.set(key, time)
      } else if (r < 0.8) {
        assert.equal(heap.delete(key), model.delete(key))
      } else {
        const now = Math.floor(random() * 10_000)
        const due = [...model].filter(([, t]) => t <= now).sort((a, b) => a[1] - b[1])
        const popped: number[] = []
        for (let p = heap.popDue(now); p; p = heap.popDue(now)) {
          popped.push(p.time)
          model.delete(p.key)
        }
        assert.deepEqual(
          popped,
          due.map(([, t]) => t)
        )
      }
      assert.equal(heap.size, model.size)
    }
  })
})

function spec(schedule: string, extra: Partial<ScheduleSpec> = {}): ScheduleSpec {
  return { schedule, creationMs: 0, latePolicy: 'all', ...extra }
}

describe('ScheduleTable', () => {
  it('hands out each tick once, in order, with its nominal time', () => {
    const table = new ScheduleTable()
    const t0 = at('2024-05-01T10:00:00.300Z')
    table.set('a', spec('*/2 * * * * *'), t0, t0)
    table.set('b', spec('* * * * * *'), t0, t0)
    assert.equal(table.nextTime(), at('2024-05-01T10:00:01Z'))
    const first = table.due(at('2024-05-01T10:00:01.010Z'))
    assert.deepEqual(first.ticks, [{ key: 'b', at: at('2024-05-01T10:00:01Z'), late: false }])
    const second = table.due(at('2024-05-01T10:00:02.005Z'))
    assert.deepEqual(second.ticks.map(t => `${t.key}@${new Date(t.at).toISOString()}`).sort(), [
      'a@2024-05-01T10:00:02.000Z',
      'b@2024-05-01T10:00:02.000Z'
    ])
    assert.equal(table.through, at('2024-05-01T10:00:02.005Z'))
    assert.deepEqual(table.due(at('2024-05-01T10:00:02.500Z')).ticks, [])
  })

  it('fires missed ticks since a watermark under the late policy, never one before the source existed', () => {
    const now = at('2024-05-01T10:00:10.500Z')
    const since = at('2024-05-01T10:00:05.000Z')
    const all = new ScheduleTable().set('k', spec('* * * * * *'), since, now)
    assert.deepEqual(
      isos(all.ticks.map(t => t.at)),
      [6, 7, 8, 9, 10].map(s => `2024-05-01T10:00:${String(s).padStart(2, '0')}.000Z`)
    )
    assert.ok(all.ticks.every(t => t.late))
    const last = new ScheduleTable().set('k', spec('* * * * * *', { latePolicy: 'last' }), since, now)
    assert.deepEqual(isos(last.ticks.map(t => t.at)), ['2024-05-01T10:00:10.000Z'])
    assert.deepEqual(new ScheduleTable().set('k', spec('* * * * * *', { latePolicy: 'none' }), since, now).ticks, [])
    const created = new ScheduleTable().set(
      'k',
      spec('* * * * * *', { creationMs: at('2024-05-01T10:00:08.000Z') }),
      since,
      now
    )
    assert.deepEqual(isos(created.ticks.map(t => t.at)), [
      '2024-05-01T10:00:08.000Z',
      '2024-05-01T10:00:09.000Z',
      '2024-05-01T10:00:10.000Z'
    ])
    const capped = new ScheduleTable({ maxLateTicks: 2 }).set('k', spec('* * * * * *'), since, now)
    assert.equal(capped.ticks.length, 2)
    assert.deepEqual(capped.truncated, ['k'])
  })

  it('a stalled wake fires the first tick on time-ish and the rest as late ticks', () => {
    const table = new ScheduleTable()
    const t0 = at('2024-05-01T10:00:00.500Z')
    table.set('k', spec('* * * * * *'), t0, t0)
    const firing = table.due(at('2024-05-01T10:00:04.200Z'))
    assert.deepEqual(
      firing.ticks.map(t => [new Date(t.at).toISOString(), t.late]),
      [
        ['2024-05-01T10:00:01.000Z', false],
        ['2024-05-01T10:00:02.000Z', true],
        ['2024-05-01T10:00:03.000Z', true],
        ['2024-05-01T10:00:04.000Z', true]
      ]
    )
    assert.equal(table.nextTime(), at('2024-05-01T10:00:05Z'))
  })

  it('resume fires what each schedule missed since its own watermark', () => {
    const table = new ScheduleTable()
    const t0 = at('2024-05-01T10:00:00.500Z')
    table.set('a', spec('* * * * * *'), t0, t0)
    table.set('b', spec('* * * * * *', { latePolicy: 'last' }), t0, t0)
    const resumed = table.resume(at('2024-05-01T10:00:03.500Z'), key =>
      key === 'a' ? at('2024-05-01T10:00:01.500Z') : t0
    )
    assert.deepEqual(
      resumed.ticks.map(t => `${t.key}@${new Date(t.at).toISOString().slice(17, 19)}`),
      ['a@02', 'a@03', 'b@03']
    )
    assert.equal(table.nextTime(), at('2024-05-01T10:00:04Z'))
  })

  it('a schedule set again (a new version) goes on from what it already handed out', () => {
    const table = new ScheduleTable()
    const t0 = at('2024-05-01T10:00:00.500Z')
    table.due(t0)
    const first = table.set(
      'k',
      spec('* * * * * *', { creationMs: t0 - 5_000 }),
      t0 - 3_000,
      at('2024-05-01T10:00:01.200Z')
    )
    assert.equal(first.ticks.length, 4)
    const since = table.firedThrough('k')!
    assert.deepEqual(table.set('k', spec('*/2 * * * * *'), since, at('2024-05-01T10:00:01.300Z')).ticks, [])
  })

  it('shares one cron expression between schedules that have the same one', () => {
    const table = new ScheduleTable()
    for (let i = 0; i < 100; i++) table.set(`k${i}`, spec('* * * * *', { timezone: 'UTC' }), 0, 0)
    table.set('other', spec('* * * * *', { timezone: 'Europe/Paris' }), 0, 0)
    assert.equal(table.distinctExpressions, 2)
    for (let i = 0; i < 100; i++) table.delete(`k${i}`)
    assert.equal(table.distinctExpressions, 1)
    assert.equal(table.size, 1)
  })
})

describe('TickTimer', () => {
  it('keeps one timer for the earliest tick and fires through an injected clock', () => {
    let now = at('2024-05-01T10:00:00.000Z')
    const timers: Array<{ callback: () => void; due: number } | undefined> = []
    const table = new ScheduleTable()
    const fired: string[] = []
    const timer = new TickTimer({
      table,
      now: () => now,
      onFiring: firing =>
        fired.push(...firing.ticks.map(t => `${t.key}@${new Date(t.at).toISOString().slice(17, 19)}`)),
      setTimer: (callback, ms) => timers.push({ callback, due: now + ms }) - 1,
      clearTimer: handle => (timers[handle as number] = undefined)
    })
    for (let i = 0; i < 50; i++) table.set(`k${i}`, spec(`${(i % 5) + 1} * * * * *`), now, now)
    timer.start()
    const live = () => timers.filter(t => t !== undefined)
    assert.equal(live().length, 1, 'one timer however many schedules')
    for (let step = 0; step < 10; step++) {
      const next = live()[0]!
      now = next.due
      timers[timers.indexOf(next)] = undefined
      next.callback()
      assert.equal(live().length, 1)
    }
    assert.deepEqual([...new Set(fired.map(f => f.slice(-2)))], ['01', '02', '03', '04', '05'])
    assert.equal(fired.length, 50)
    timer.stop()
    assert.equal(live().length, 0)
  })
})

describe('ping events', () => {
  const builder = new PingEventBuilder({
    namespace: 'ns',
    name: 'beat',
    uid: '8c1f0c3e-3d0a-4f59-9e4b-7a3f8d2f1c11',
    contentType: 'application/json',
    data: '{"hello":"world"}',
    extensions: { team: 'blue' }
  })

  it('carries Knative PingSource attributes, the nominal tick as ce-time, and an id from uid and tick', () => {
    const tick = at('2024-05-01T10:00:02Z')
    const event = builder.event(tick, false)
    assert.equal(event.attributes.type, PING_EVENT_TYPE)
    assert.equal(event.attributes.source, '/apis/v1/namespaces/ns/pingsources/beat')
    assert.equal(event.attributes.time, '2024-05-01T10:00:02.000Z')
    assert.equal(event.attributes.datacontenttype, 'application/json')
    assert.equal(event.data.toString(), '{"hello":"world"}')
    assert.deepEqual(event.extensions, { team: 'blue' })
    assert.match(event.attributes.id, /^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    assert.equal(builder.event(tick, true).attributes.id, event.attributes.id, 'a resend has the same id')
    assert.equal(builder.event(tick, true).extensions[LATE_EXTENSION], 'true')
    assert.notEqual(builder.event(tick + 2000, false).attributes.id, event.attributes.id)
    assert.notEqual(tickEventId('another-uid', tick), event.attributes.id)
  })

  it('decodes dataBase64, and sends no content type without data', () => {
    const binary = new PingEventBuilder({
      namespace: 'ns',
      name: 'b',
      uid: 'u',
      contentType: 'application/octet-stream',
      dataBase64: 'AAEC\n/w=='
    })
    assert.deepEqual([...binary.event(0, false).data], [0, 1, 2, 255])
    const empty = new PingEventBuilder({ namespace: 'ns', name: 'e', uid: 'u', contentType: 'text/plain' })
    assert.equal(empty.event(0, false).data.length, 0)
    assert.equal(empty.event(0, false).attributes.datacontenttype, undefined)
  })

  it('a source annotation picks its late policy; a wrong one is reported and the default kept', () => {
    assert.deepEqual(latePolicyOf(undefined, 'all'), { policy: 'all' })
    assert.deepEqual(latePolicyOf('last', 'all'), { policy: 'last' })
    assert.deepEqual(latePolicyOf('some', 'none'), { policy: 'none', invalid: 'some' })
  })
})
