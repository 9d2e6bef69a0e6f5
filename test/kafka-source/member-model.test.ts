// A model-based property test of a KafkaSource member's partition life, on the real broker: fast-check drives
// random interleavings of what moves partitions between members — vreplicas added and removed on two
// dispatchers (assign, revoke, re-assign), dispatchers closed with and without leaving and started again, records
// produced in small batches and in batches past the fetch limits (answers empty for partitions with data), a
// sink whose answers come late, fail and are retried — against a reference model: what the topic holds (the
// producer's acknowledged offsets) and what reached `deliver`. After every step it asserts, from the group's
// committed offsets as the coordinator holds them, that no commit passes a record not delivered; throughout, that
// no record is in delivery by two members at once; at the end, that everything was delivered, the group's commit
// is at the log end, and no member's tracker refused a commit. Each ordering runs one record at a time and in
// batches (delivery.shoal.dev/batch-*), a batch at the sink being all or nothing.
//
// With `ordering: key` (records carry a few keys), also that no two records of one key are in
// delivery at once, on any member — in batches, no two batches holding one key.
//
//   SHOAL_MODEL_RUNS=20 npm test -- test/kafka-source/member-model.test.ts     more runs (default 3 per ordering)
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { after, describe, it } from 'node:test'
import fc from 'fast-check'
import { Kafka, logLevel } from 'kafkajs'
import type { Producer } from 'kafkajs'
import { SourceRunner } from '../../src/kafka-source/index.ts'
import type { BatchLimits, Ordering, Outcome, SourceRecord } from '../../src/kafka-source/index.ts'
import { brokers, uniqueName } from '../helpers/kafka.ts'
import { eventually } from '../helpers/wait.ts'
import { committedOffsets, createTopic, endOffsets, testLog } from './helpers.ts'

const PARTITIONS = 6
const RUNS = Number(process.env['SHOAL_MODEL_RUNS'] ?? 3)

/** The real system of one run: a topic, two dispatchers' runners of one group, a deliver that observes. */
class Real {
  readonly topic: string
  readonly runners: Array<SourceRunner | undefined> = [undefined, undefined]
  readonly vreplicas = [0, 0]
  /** Every offset delivered (`partition:offset` → times). */
  readonly delivered = new Map<string, number>()
  /** Offsets in delivery right now, and overlaps seen (two members with the same record in delivery). */
  readonly inDelivery = new Map<string, number>()
  overlaps = 0
  /** `ordering: key`: records of one key (per partition) in delivery right now, and overlaps seen. */
  readonly keysInDelivery = new Map<string, number>()
  keyOverlaps = 0
  failRate = 0
  delayMs = 0
  readonly log: string[] = []
  readonly producer: Producer
  readonly ordering: Ordering
  /** Set: the source delivers in batches (delivery.shoal.dev/batch-*), each one all or nothing. */
  readonly batches: BatchLimits | undefined
  refused = 0

  constructor(topic: string, ordering: Ordering, producer: Producer, batches?: BatchLimits) {
    this.topic = topic
    this.ordering = ordering
    this.producer = producer
    this.batches = batches
  }

  /** A batch at the sink: in delivery together, then delivered together — or, when it fails, none of it. */
  readonly deliverBatch = async (
    records: readonly SourceRecord[],
    _signal: AbortSignal,
    wire: AbortSignal
  ): Promise<readonly Outcome[]> => {
    const ids = records.map(record => `${record.partition}:${record.offset}`)
    for (const id of ids) {
      const now = (this.inDelivery.get(id) ?? 0) + 1
      this.inDelivery.set(id, now)
      if (now > 1) this.overlaps++
    }
    // A batch holds each of its keys once (records of one key may share it).
    const keys = new Set(records.map(record => `${record.partition}/${record.key?.toString() ?? ''}`))
    for (const key of keys) {
      const ofKey = (this.keysInDelivery.get(key) ?? 0) + 1
      this.keysInDelivery.set(key, ofKey)
      if (ofKey > 1) this.keyOverlaps++
    }
    try {
      if (this.delayMs > 0) await answerWithin(Math.random() * this.delayMs, wire)
      if (Math.random() < this.failRate) throw new Error('sink failed the batch')
      for (const id of ids) this.delivered.set(id, (this.delivered.get(id) ?? 0) + 1)
      return ids.map(() => 'delivered')
    } finally {
      for (const key of keys) this.keysInDelivery.set(key, this.keysInDelivery.get(key)! - 1)
      for (const id of ids) {
        const left = (this.inDelivery.get(id) ?? 1) - 1
        if (left === 0) this.inDelivery.delete(id)
        else this.inDelivery.set(id, left)
      }
    }
  }

  readonly deliver = async (record: SourceRecord, _signal: AbortSignal, wire: AbortSignal): Promise<Outcome> => {
    const id = `${record.partition}:${record.offset}`
    const now = (this.inDelivery.get(id) ?? 0) + 1
    this.inDelivery.set(id, now)
    if (now > 1) this.overlaps++
    const key = `${record.partition}/${record.key?.toString() ?? ''}`
    const ofKey = (this.keysInDelivery.get(key) ?? 0) + 1
    this.keysInDelivery.set(key, ofKey)
    if (ofKey > 1) this.keyOverlaps++
    try {
      // A request cut on the wire (a drain's end) is over here: the sink may have it, which the docs allow.
      if (this.delayMs > 0) await answerWithin(Math.random() * this.delayMs, wire)
      // A throw is "not handled": the runner retries the record after a backoff.
      if (Math.random() < this.failRate) throw new Error('sink failed')
      this.delivered.set(id, (this.delivered.get(id) ?? 0) + 1)
      return 'delivered'
    } finally {
      this.keysInDelivery.set(key, this.keysInDelivery.get(key)! - 1)
      const left = (this.inDelivery.get(id) ?? 1) - 1
      if (left === 0) this.inDelivery.delete(id)
      else this.inDelivery.set(id, left)
    }
  }

  runner(i: number): SourceRunner {
    let runner = this.runners[i]
    if (runner === undefined) {
      runner = new SourceRunner({
        brokers: brokers(),
        source: {
          key: `KafkaSource/default/${this.topic}`,
          groupId: this.topic,
          topics: [this.topic],
          initialOffset: 'earliest',
          ordering: this.ordering,
          maxInFlight: 20
        },
        vreplicas: 0,
        dispatcherId: `dispatcher-${i}`,
        deliver: this.deliver,
        ...(this.batches === undefined ? {} : { batching: { limits: this.batches, deliver: this.deliverBatch } }),
        log: testLog(this.log)
      })
      this.runners[i] = runner
    }
    return runner
  }

  countRefused(): void {
    for (const runner of this.runners) {
      for (const member of runner?.status().members ?? []) {
        this.refused += Object.values(member.commitsRefused).reduce((a, b) => a + b, 0)
      }
    }
  }

  async closeAll(): Promise<void> {
    this.countRefused()
    await Promise.all(this.runners.flatMap(r => (r ? [r.close({ drainMs: 2_000, leaveGroup: true })] : [])))
  }
}

/** Resolves after `ms`, or rejects when the request is cut short on the wire. */
function answerWithin(ms: number, wire: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms)
    wire.addEventListener('abort', () => (clearTimeout(timer), reject(new Error('cut'))), { once: true })
  })
}

/** The model: what the topic holds, per partition (the producer's acknowledged end offsets). */
interface Model {
  readonly ends: bigint[]
}

/** No commit passes a record not delivered: the group's commit on each partition ≤ its first undelivered offset. */
async function checkCommits(model: Model, real: Real): Promise<void> {
  const committed = await committedOffsets(real.topic, real.topic, PARTITIONS)
  committed.forEach((commit, partition) => {
    for (let offset = 0n; offset < commit && offset < model.ends[partition]!; offset++) {
      if (!real.delivered.has(`${partition}:${offset}`)) {
        assert.fail(`partition ${partition} committed at ${commit} past undelivered offset ${offset}`)
      }
    }
  })
}

type Command = fc.AsyncCommand<Model, Real>

/** A step of the run: it acts on the real system, then checks every commit against what was delivered. */
function step(label: string, act: (model: Model, real: Real) => Promise<void> | void): Command {
  return {
    check: () => true,
    run: async (model, real) => {
      await act(model, real)
      await checkCommits(model, real)
    },
    toString: () => label
  }
}

const scale = (dispatcher: number, vreplicas: number): Command =>
  step(`scale dispatcher-${dispatcher} to ${vreplicas}`, async (_, real) => {
    real.countRefused()
    await real.runner(dispatcher).setVReplicas(vreplicas)
    real.vreplicas[dispatcher] = vreplicas
  })

const restart = (dispatcher: number, leaveGroup: boolean): Command =>
  step(`restart dispatcher-${dispatcher}${leaveGroup ? ' (leaving)' : ''}`, async (_, real) => {
    const runner = real.runners[dispatcher]
    if (runner !== undefined) {
      real.countRefused()
      await runner.close({ drainMs: 1_000, leaveGroup })
      real.runners[dispatcher] = undefined
    }
    await real.runner(dispatcher).setVReplicas(real.vreplicas[dispatcher]!)
  })

const produce = (perPartition: number, recordBytes: number): Command =>
  step(`produce ${perPartition} × ${recordBytes} B per partition`, async (model, real) => {
    // One send: one batch per partition, as a real producer batches (large ones are past the fetch limits).
    const messages = Array.from({ length: PARTITIONS }, (_, partition) =>
      // A few keys, so that `ordering: key` has records of one key to hold back.
      Array.from({ length: perPartition }, (_, i) => ({
        partition,
        key: `k${(i * 7) % 5}`,
        value: randomBytes(recordBytes)
      }))
    ).flat()
    const sent = await real.producer.send({ topic: real.topic, acks: -1, messages })
    for (const meta of sent) {
      const end = BigInt(meta.baseOffset ?? '0') + BigInt(perPartition)
      if (end > model.ends[meta.partition]!) model.ends[meta.partition] = end
    }
  })

const sink = (failRate: number, delayMs: number): Command =>
  step(`sink fails ${Math.round(failRate * 100)} %, answers within ${delayMs} ms`, (_, real) => {
    real.failRate = failRate
    real.delayMs = delayMs
  })

const pause = (ms: number): Command => step(`let ${ms} ms pass`, () => new Promise(resolve => setTimeout(resolve, ms)))

const commands = [
  fc.tuple(fc.integer({ min: 0, max: 1 }), fc.integer({ min: 0, max: 3 })).map(([d, n]) => scale(d, n)),
  fc.tuple(fc.integer({ min: 0, max: 1 }), fc.boolean()).map(([d, leave]) => restart(d, leave)),
  fc.oneof(
    fc.integer({ min: 1, max: 60 }).map(n => produce(n, 200)),
    // ~300 KB a partition: one batch past the member's 256 KiB per-partition fetch limit.
    fc.constant(produce(300, 1_000))
  ),
  // Answers within 4 s: longer than the rebalance that moves a partition, so its next owner would start while the
  // former one still delivers but for the hand-over.
  fc.tuple(fc.constantFrom(0, 0.1, 0.3), fc.constantFrom(0, 20, 200, 4_000)).map(([f, d]) => sink(f, d)),
  fc.integer({ min: 100, max: 1_500 }).map(ms => pause(ms))
]

describe('a KafkaSource member’s partition life, model-based on the real broker', () => {
  const kafka = new Kafka({ clientId: 'member-model', brokers: brokers(), logLevel: logLevel.NOTHING })
  const producer = kafka.producer({ allowAutoTopicCreation: false, idempotent: true, maxInFlightRequests: 1 })
  after(() => producer.disconnect())

  // Batches small enough that a fetch makes several, and a 1 KB record's bytes close one early.
  const batchLimits: BatchLimits = { maxEvents: 10, maxBytes: 4_000, maxWaitMs: 20 }
  const variants = [
    ...(['ordered', 'unordered'] as const).flatMap(ordering => [
      { ordering, batches: undefined },
      { ordering, batches: batchLimits }
    ]),
    { ordering: 'key' as const, batches: undefined },
    { ordering: 'key' as const, batches: batchLimits }
  ]
  for (const { ordering, batches } of variants) {
    const mode = batches === undefined ? ordering : `${ordering}, in batches`
    it(`never commits past a record not delivered, nor delivers one on two members at once (${mode})`, async () => {
      await producer.connect()
      await fc.assert(
        fc.asyncProperty(fc.commands(commands, { size: 'medium', maxCommands: 10 }), async cmds => {
          const topic = uniqueName(`model-${ordering}`)
          await createTopic(topic, PARTITIONS)
          const real = new Real(topic, ordering, producer, batches)
          const model: Model = { ends: Array.from({ length: PARTITIONS }, () => 0n) }
          try {
            // Records wait before the source exists.
            await produce(40, 200).run(model, real)
            await fc.asyncModelRun(() => ({ model, real }), cmds)
            // Then let it settle: a healthy sink, members on both dispatchers, everything delivered.
            real.failRate = 0
            real.delayMs = 0
            await real.runner(0).setVReplicas(Math.max(1, real.vreplicas[0]!))
            await real.runner(1).setVReplicas(Math.max(1, real.vreplicas[1]!))
            const ends = await endOffsets(topic, PARTITIONS)
            assert.deepEqual(ends, model.ends, "the topic's ends are what the producer was acknowledged")
            await eventually(
              async () => {
                const committed = await committedOffsets(topic, topic, PARTITIONS)
                return committed.every((c, p) => c === ends[p]) ? true : undefined
              },
              60_000,
              'the group committed at the log end'
            )
            await checkCommits(model, real)
            const missing: string[] = []
            ends.forEach((end, p) => {
              for (let o = 0n; o < end; o++) if (!real.delivered.has(`${p}:${o}`)) missing.push(`${p}:${o}`)
            })
            assert.deepEqual(missing.slice(0, 10), [], `${missing.length} records never delivered`)
            assert.equal(real.overlaps, 0, 'records in delivery on two members at once')
            if (ordering === 'key') assert.equal(real.keyOverlaps, 0, 'records of one key in delivery at once')
          } finally {
            await real.closeAll()
          }
          assert.equal(
            real.refused,
            0,
            `commits refused by the tracker:\n${real.log.filter(l => l.includes('refused')).join('\n')}`
          )
        }),
        { numRuns: RUNS, endOnFailure: true }
      )
    })
  }
})
