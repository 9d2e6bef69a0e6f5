// A model test of `ordering: key` with batches in a member's delivery window (DeliveryWindow with its KeyBatches,
// real offset trackers, no broker): fast-check draws the partitions' records (a few keys, some null, some large),
// the batch limits, the in-flight limit, and the order in which the sink answers batches — success, or a throw the
// window retries whole — and a partition revoked midway. Throughout: no key in two batches in delivery, each
// key's records reach the sink in offset order and only once the batch before is handled, the window never idles
// while a record could start, and it counts what it holds; at the end every record of an owned partition was
// delivered once and its commit is at its end.
import assert from 'node:assert/strict'
import { afterEach, beforeEach, describe, it, mock } from 'node:test'
import type { Consumer } from '@platformatic/kafka'
import fc from 'fast-check'
import { DeliveryWindow } from '../../src/kafka-source/delivery-window.ts'
import { laneKeyOf } from '../../src/kafka-source/key-lanes.ts'
import type { MemberContext, SourceMemberOptions } from '../../src/kafka-source/member-context.ts'
import type { OffsetCommitter } from '../../src/kafka-source/offset-committer.ts'
import { OffsetTracker } from '../../src/kafka-source/offset-tracker.ts'
import { newPartitionRun, unstarted } from '../../src/kafka-source/partition-run.ts'
import type { PartitionRun } from '../../src/kafka-source/partition-run.ts'
import type { BatchLimits, Outcome, SourceRecord } from '../../src/kafka-source/types.ts'
import { Wake } from '../../src/kafka-source/wake.ts'

interface Pending {
  readonly records: readonly SourceRecord[]
  readonly resolve: (outcomes: readonly Outcome[]) => void
  readonly reject: (error: Error) => void
}

type Step = { readonly kind: 'answer'; readonly pick: number; readonly fail: boolean } | { readonly kind: 'revoke' }

const scenario = fc.record({
  partitions: fc.integer({ min: 1, max: 3 }),
  // Per partition: each record's key (an index into a few keys, or null) and whether it is large.
  records: fc.array(
    fc.array(fc.record({ key: fc.option(fc.integer({ min: 0, max: 5 }), { freq: 5 }), large: fc.boolean() }), {
      maxLength: 40,
      size: 'max'
    }),
    { minLength: 3, maxLength: 3 }
  ),
  maxEvents: fc.integer({ min: 2, max: 6 }),
  maxInFlight: fc.integer({ min: 1, max: 6 }),
  steps: fc.array<Step>(
    fc.oneof(
      {
        weight: 30,
        arbitrary: fc.record({ kind: fc.constant('answer' as const), pick: fc.nat(), fail: fc.boolean() })
      },
      { weight: 1, arbitrary: fc.constant({ kind: 'revoke' as const }) }
    ),
    { maxLength: 150, size: 'max' }
  )
})

const settle = () => new Promise<void>(resolve => setImmediate(resolve))
const keyId = (record: SourceRecord) => `${record.partition}/${laneKeyOf(record.key) ?? '∅'}`
/** A large record's value: three of them are past the batch's bytes. */
const LARGE = 400

function memberContext(
  runs: Map<string, PartitionRun>,
  maxInFlight: number,
  limits: BatchLimits,
  deliver: (records: readonly SourceRecord[]) => Promise<readonly Outcome[]>
): MemberContext {
  const options = {
    source: { key: 'KafkaSource/t/model', groupId: 'g', topics: ['t'], initialOffset: 'earliest', ordering: 'key' },
    maxInFlight,
    deliver: () => Promise.reject(new Error('a batching source delivers batches')),
    batching: { limits, deliver },
    log: () => undefined,
    clientId: 'model',
    brokers: [],
    groupInstanceId: 'model-0',
    // The window never talks to the group or the broker.
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

describe('ordering: key with batches in the delivery window, model-based', () => {
  beforeEach(() => mock.timers.enable({ apis: ['setTimeout'] }))
  afterEach(() => mock.timers.reset())

  it('never has a key in two batches at once, keeps each key in offset order through retries, loses nothing', async () => {
    await fc.assert(
      fc.asyncProperty(scenario, async s => {
        // No wait: a batch goes as soon as it has room, so the window must never idle with a record that could go.
        const limits: BatchLimits = { maxEvents: s.maxEvents, maxBytes: 1_000, maxWaitMs: 0 }
        const pending: Pending[] = []
        /** Per partition and key: its offsets in order, how many are handled, whether a batch holding it is out. */
        const order = new Map<string, { offsets: bigint[]; handled: number; out: boolean }>()
        const deliveredOnce = new Map<string, number>()
        const deliver = (records: readonly SourceRecord[]): Promise<readonly Outcome[]> => {
          assert.ok(records.length >= 1 && records.length <= s.maxEvents, `a batch of ${records.length}`)
          const seen = new Map<string, number>()
          for (let i = 0; i < records.length; i++) {
            const record = records[i]!
            assert.equal(record.partition, records[0]!.partition, 'a batch of two partitions')
            if (i > 0) assert.ok(records[i - 1]!.offset < record.offset, 'a batch in offset order')
            if (record.key === null) continue
            const lane = order.get(keyId(record))!
            const n = seen.get(keyId(record)) ?? 0
            if (n === 0) assert.equal(lane.out, false, `key ${keyId(record)} in two batches at once`)
            assert.equal(record.offset, lane.offsets[lane.handled + n], `key ${keyId(record)} out of offset order`)
            seen.set(keyId(record), n + 1)
          }
          for (const id of seen.keys()) order.get(id)!.out = true
          return new Promise((resolve, reject) => pending.push({ records, resolve, reject }))
        }
        const runs = new Map<string, PartitionRun>()
        const window = new DeliveryWindow(memberContext(runs, s.maxInFlight, limits, deliver))
        const all: PartitionRun[] = []
        for (let p = 0; p < s.partitions; p++) {
          const run = newPartitionRun(`t/${p}`, 't', p)
          const tracker = new OffsetTracker(0n)
          run.tracker = tracker
          s.records[p]!.forEach(({ key, large }, i) => {
            const record: SourceRecord = {
              topic: 't',
              partition: p,
              offset: BigInt(i),
              timestamp: 0n,
              key: key === null ? null : Buffer.from(`k${key}`),
              value: Buffer.alloc(large ? LARGE : 1),
              headers: [],
              fetchedAt: performance.now()
            }
            const lane = order.get(keyId(record)) ?? { offsets: [], handled: 0, out: false }
            lane.offsets.push(record.offset)
            order.set(keyId(record), lane)
            run.queue.push({ record, tracker, entry: tracker.fetched(record.offset) })
          })
          tracker.advanceTo(BigInt(s.records[p]!.length))
          window.queuedMore(s.records[p]!.length)
          runs.set(run.id, run)
          all.push(run)
        }
        const answer = (index: number, fail: boolean) => {
          const [item] = pending.splice(index, 1)
          const keys = new Map<string, number>()
          for (const record of item!.records) {
            if (record.key !== null) keys.set(keyId(record), (keys.get(keyId(record)) ?? 0) + 1)
          }
          for (const [id, n] of keys) {
            const lane = order.get(id)!
            lane.out = false
            if (!fail) lane.handled += n
          }
          if (fail) {
            item!.reject(new Error('sink failed the batch'))
            return
          }
          for (const record of item!.records) {
            const id = `${record.partition}:${record.offset}`
            deliveredOnce.set(id, (deliveredOnce.get(id) ?? 0) + 1)
          }
          item!.resolve(item!.records.map(() => 'delivered'))
        }
        const checkIdle = () => {
          // Work-conserving: with room in the window, no owned partition with room holds a record that could go.
          const cap = Math.max(1, s.maxInFlight - (runs.size - 1))
          if (window.inFlight >= s.maxInFlight) return
          for (const run of runs.values()) {
            if (run.inFlight >= cap) continue
            assert.equal(run.keyBatches?.building ?? 0, 0, `partition ${run.id} holds a batch that could go`)
            for (const item of run.queue.slice(run.head)) {
              const { record } = item!
              const lane = order.get(keyId(record))!
              const startable = record.key === null || (!lane.out && lane.offsets[lane.handled] === record.offset)
              assert.ok(!startable, `partition ${run.id} idles with ${record.offset}, which could go`)
            }
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
          const held = [...runs.values()].reduce((n, run) => n + unstarted(run), 0)
          assert.equal(window.queued, held, 'the window counts queued, key-waiting and batched records')
        }
        for (let guard = 0; window.inFlight > 0 || window.queued > 0; guard++) {
          assert.ok(guard < 10_000, 'the window never drains')
          if (pending.length > 0) answer(0, false)
          else mock.timers.tick(60_000)
          await settle()
        }
        for (const run of all) {
          if (!runs.has(run.id)) continue
          const end = BigInt(s.records[run.partition]!.length)
          for (let o = 0n; o < end; o++) {
            assert.equal(deliveredOnce.get(`${run.partition}:${o}`), 1, `${run.partition}:${o} delivered once`)
          }
          assert.equal(run.tracker!.committable(), end, 'the commit is at the end')
          assert.equal(run.keyBatches?.busyKeys ?? 0, 0, 'no key held once everything is over')
        }
      }),
      { numRuns: Number(process.env['SHOAL_MODEL_RUNS'] ?? 200) }
    )
  })
})
