// A model test of `ordering: key` in a member's delivery window (DeliveryWindow with its KeyLanes, real offset
// trackers, no broker): fast-check draws the partitions' records (a few keys, some null), the in-flight limit, and
// the order in which the sink answers — success, or a throw the window retries — and a partition revoked midway.
// Throughout: never two records of one key in delivery, each key's records start in offset order and only once
// the one before is handled, and the window never idles while a record could start; at the end every record of
// an owned partition was delivered once and its commit is at its end.
import assert from 'node:assert/strict'
import { afterEach, beforeEach, describe, it, mock } from 'node:test'
import type { Consumer } from '@platformatic/kafka'
import fc from 'fast-check'
import { MAX_KEY_WAITING_PER_PARTITION } from '../../src/kafka-source/defaults.ts'
import { DeliveryWindow } from '../../src/kafka-source/delivery-window.ts'
import type { GroupMembership } from '../../src/kafka-source/group-membership.ts'
import { KeyLanes, laneKeyOf } from '../../src/kafka-source/key-lanes.ts'
import type { MemberContext, SourceMemberOptions } from '../../src/kafka-source/member-context.ts'
import type { OffsetCommitter } from '../../src/kafka-source/offset-committer.ts'
import { OffsetTracker } from '../../src/kafka-source/offset-tracker.ts'
import { newPartitionRun } from '../../src/kafka-source/partition-run.ts'
import type { PartitionRun } from '../../src/kafka-source/partition-run.ts'
import { PartitionFetcher } from '../../src/kafka-source/partition-fetcher.ts'
import type { StartPositions } from '../../src/kafka-source/start-positions.ts'
import type { Outcome, SourceRecord } from '../../src/kafka-source/types.ts'
import { Wake } from '../../src/kafka-source/wake.ts'

interface Pending {
  readonly record: SourceRecord
  readonly resolve: (outcome: Outcome) => void
  readonly reject: (error: Error) => void
}

/** A sink answer: the `pick`-th pending delivery (modulo) succeeds or throws; or a partition is revoked. */
type Step = { readonly kind: 'answer'; readonly pick: number; readonly fail: boolean } | { readonly kind: 'revoke' }

const scenario = fc.record({
  partitions: fc.integer({ min: 1, max: 3 }),
  // Per partition: each record's key, an index into a few keys, or null.
  // size 'max': fast-check's default size would keep these arrays to about ten elements.
  keys: fc.array(fc.array(fc.option(fc.integer({ min: 0, max: 5 }), { freq: 5 }), { maxLength: 40, size: 'max' }), {
    minLength: 3,
    maxLength: 3
  }),
  maxInFlight: fc.integer({ min: 1, max: 8 }),
  steps: fc.array<Step>(
    fc.oneof(
      {
        weight: 30,
        arbitrary: fc.record({ kind: fc.constant('answer' as const), pick: fc.nat(), fail: fc.boolean() })
      },
      { weight: 1, arbitrary: fc.constant({ kind: 'revoke' as const }) }
    ),
    { maxLength: 200, size: 'max' }
  )
})

const settle = () => new Promise<void>(resolve => setImmediate(resolve))
const keyId = (partition: number, key: Buffer | null) => `${partition}/${laneKeyOf(key) ?? '∅'}`

/** What the delivery window and the fetcher's choice read of a member: its options and owned partitions. */
function memberContext(
  runs: Map<string, PartitionRun>,
  maxInFlight: number,
  deliver: (record: SourceRecord) => Promise<Outcome>
): MemberContext {
  const options = {
    source: { key: 'KafkaSource/t/model', groupId: 'g', topics: ['t'], initialOffset: 'earliest', ordering: 'key' },
    maxInFlight,
    deliver,
    log: () => undefined,
    clientId: 'model',
    brokers: [],
    groupInstanceId: 'model-0',
    // Neither the window nor `fetchable` talks to the group or the broker.
    committer: undefined as unknown as OffsetCommitter
  } satisfies SourceMemberOptions
  return {
    options,
    consumer: undefined as unknown as Consumer,
    topics: new Set(['t']),
    runs,
    wake: new Wake(),
    signal: new AbortController().signal,
    stopping: () => false,
    fields: extra => extra
  }
}

/** A partition of `count` records of key `hot`, queued in the window. */
function hotPartition(partition: number, count: number, window: DeliveryWindow): PartitionRun {
  const run = newPartitionRun(`t/${partition}`, 't', partition)
  const tracker = new OffsetTracker(0n)
  run.tracker = tracker
  for (let i = 0; i < count; i++) {
    const record: SourceRecord = {
      topic: 't',
      partition,
      offset: BigInt(i),
      timestamp: 0n,
      key: Buffer.from('hot'),
      value: null,
      headers: []
    }
    run.queue.push({ record, tracker, entry: tracker.fetched(record.offset) })
  }
  tracker.advanceTo(BigInt(count))
  window.queuedMore(count)
  return run
}

describe('ordering: key in the delivery window, model-based', () => {
  beforeEach(() => mock.timers.enable({ apis: ['setTimeout'] }))
  afterEach(() => mock.timers.reset())

  it('delivers each key one at a time in offset order through retries, other keys in parallel, nothing lost', async () => {
    await fc.assert(
      fc.asyncProperty(scenario, async s => {
        const pending: Pending[] = []
        /** Per partition and key: offsets in order, and how many of them are handled. */
        const order = new Map<string, { offsets: bigint[]; handled: number; out: bigint | undefined }>()
        const deliveredOnce = new Map<string, number>()
        const deliver = (record: SourceRecord): Promise<Outcome> => {
          const lane = order.get(keyId(record.partition, record.key))!
          if (record.key !== null) {
            assert.equal(lane.out, undefined, `two records of key ${keyId(record.partition, record.key)} at once`)
            assert.equal(record.offset, lane.offsets[lane.handled], 'a key out of offset order')
            lane.out = record.offset
          }
          return new Promise<Outcome>((resolve, reject) => pending.push({ record, resolve, reject }))
        }
        const runs = new Map<string, PartitionRun>()
        const ctx = memberContext(runs, s.maxInFlight, deliver)
        const window = new DeliveryWindow(ctx)
        const all: PartitionRun[] = []
        for (let p = 0; p < s.partitions; p++) {
          const run = newPartitionRun(`t/${p}`, 't', p)
          const tracker = new OffsetTracker(0n)
          run.tracker = tracker
          s.keys[p]!.forEach((k, i) => {
            const record: SourceRecord = {
              topic: 't',
              partition: p,
              offset: BigInt(i),
              timestamp: 0n,
              key: k === null ? null : Buffer.from(`k${k}`),
              value: null,
              headers: []
            }
            const lane = order.get(keyId(p, record.key)) ?? { offsets: [], handled: 0, out: undefined }
            lane.offsets.push(record.offset)
            order.set(keyId(p, record.key), lane)
            run.queue.push({ record, tracker, entry: tracker.fetched(record.offset) })
          })
          tracker.advanceTo(BigInt(s.keys[p]!.length))
          window.queuedMore(s.keys[p]!.length)
          runs.set(run.id, run)
          all.push(run)
        }
        const answer = (index: number, fail: boolean) => {
          const [item] = pending.splice(index, 1)
          const { record } = item!
          const lane = order.get(keyId(record.partition, record.key))!
          lane.out = undefined
          if (fail) {
            item!.reject(new Error('sink failed'))
            return
          }
          if (record.key !== null) lane.handled++
          const id = `${record.partition}:${record.offset}`
          deliveredOnce.set(id, (deliveredOnce.get(id) ?? 0) + 1)
          item!.resolve('delivered')
        }
        const checkIdle = () => {
          // Work-conserving: with room in the window, no owned partition with room has a record that could start.
          const cap = Math.max(1, s.maxInFlight - (runs.size - 1))
          if (window.inFlight >= s.maxInFlight) return
          for (const run of runs.values()) {
            if (run.inFlight >= cap) continue
            const startable = run.queue.slice(run.head).some(item => {
              const { record } = item!
              if (record.key === null) return true
              const lane = order.get(keyId(record.partition, record.key))!
              return lane.out === undefined && lane.offsets[lane.handled] === record.offset
            })
            assert.ok(!startable, `partition ${run.id} idles with a record that could start`)
          }
        }
        const retrying = () => window.inFlight - pending.length
        window.pump()
        await settle()
        for (const step of s.steps) {
          if (step.kind === 'revoke') {
            const run = [...runs.values()].at(-1)
            if (run === undefined || runs.size === 1) continue
            run.revoked = true
            run.stop.abort()
            window.dropQueue(run)
            runs.delete(run.id)
            window.pump()
          } else if (pending.length > 0) {
            answer(step.pick % pending.length, step.fail)
          } else if (retrying() > 0) {
            mock.timers.tick(60_000)
          }
          await settle()
          if (retrying() === 0) checkIdle()
          const queued = [...runs.values()].reduce((n, r) => n + r.queue.length - r.head + r.lanes.waiting, 0)
          assert.equal(window.queued, queued, 'the window counts queued and key-waiting records')
        }
        // Then a healthy sink until everything is over.
        for (let guard = 0; window.inFlight > 0 || window.queued > 0; guard++) {
          assert.ok(guard < 10_000, 'the window never drains')
          if (pending.length > 0) answer(0, false)
          else mock.timers.tick(60_000)
          await settle()
        }
        for (const run of all) {
          if (!runs.has(run.id)) continue
          const end = BigInt(s.keys[run.partition]!.length)
          for (let o = 0n; o < end; o++) {
            assert.equal(deliveredOnce.get(`${run.partition}:${o}`), 1, `${run.partition}:${o} delivered once`)
          }
          assert.equal(run.tracker!.committable(), end, 'the commit is at the end')
          assert.equal(run.lanes.busyKeys, 0)
        }
      }),
      { numRuns: Number(process.env['SHOAL_MODEL_RUNS'] ?? 300) }
    )
  })

  it('fetches a partition no further while MAX_KEY_WAITING_PER_PARTITION records wait behind a busy key', async () => {
    const runs = new Map<string, PartitionRun>()
    const ctx = memberContext(runs, 10, () => new Promise<Outcome>(() => undefined))
    const window = new DeliveryWindow(ctx)
    const full = hotPartition(0, MAX_KEY_WAITING_PER_PARTITION + 1, window)
    const room = hotPartition(1, MAX_KEY_WAITING_PER_PARTITION, window)
    runs.set(full.id, full)
    runs.set(room.id, room)
    window.pump()
    assert.deepEqual([full.inFlight, full.lanes.waiting], [1, MAX_KEY_WAITING_PER_PARTITION])
    assert.deepEqual([room.inFlight, room.lanes.waiting], [1, MAX_KEY_WAITING_PER_PARTITION - 1])
    assert.equal(window.queued, 2 * MAX_KEY_WAITING_PER_PARTITION - 1, 'waiting records count as queued')
    const fetcher = new PartitionFetcher(
      ctx,
      undefined as unknown as GroupMembership,
      undefined as unknown as StartPositions,
      window
    )
    try {
      assert.deepEqual(
        fetcher.fetchable().map(run => run.id),
        [room.id]
      )
    } finally {
      await fetcher.close()
    }
    window.dropQueue(full)
    assert.equal(window.queued, MAX_KEY_WAITING_PER_PARTITION - 1, 'a dropped partition lets its waiting records go')
  })

  it('parks a busy key’s records in order and frees them one at a time', () => {
    const lanes = new KeyLanes<string>()
    assert.equal(lanes.admit('a', 'a0'), true)
    assert.equal(lanes.admit('a', 'a1'), false)
    assert.equal(lanes.admit('b', 'b0'), true)
    assert.equal(lanes.admit('a', 'a2'), false)
    assert.equal(lanes.admit(undefined, 'n0'), true)
    assert.equal(lanes.admit(undefined, 'n1'), true, 'a record without a key waits for nothing')
    assert.equal(lanes.waiting, 2)
    assert.equal(lanes.nextReady(), undefined)
    lanes.done('a')
    assert.equal(lanes.nextReady(), 'a1')
    assert.equal(lanes.admit('a', 'a3'), false, 'the key stays busy while its next record is out')
    lanes.done('a')
    lanes.done('b')
    assert.equal(lanes.nextReady(), 'a2')
    assert.equal(lanes.nextReady(), undefined)
    assert.equal(lanes.clear(), 1)
    assert.equal(lanes.busyKeys, 0)
  })
})
