// The answers Kafka may give a fetch, made by the real broker: a partition answered with an empty (or truncated)
// record set while it has data — its first batch is larger than the request's per-partition limit and it is not
// the first partition with data (KIP-74), or the answer's total limit is used up by other partitions — batches
// of records up to the broker's maximum size, compressed batches, and transactions with aborted batches. The
// records are written by an independent client (kafkajs) batching as real producers do: one produce of many
// records makes one large batch per partition. Every test counts against the topic itself: every offset of every
// partition delivered, and the group's commit at the log end.
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { after, describe, it } from 'node:test'
import { CompressionTypes, Kafka, logLevel } from 'kafkajs'
import type { Producer } from 'kafkajs'
import { Admin } from '@platformatic/kafka'
import { LogTailer } from '../../src/kafka/index.ts'
import type { LogRecord } from '../../src/kafka/index.ts'
import type { FetchLimits } from '../../src/kafka/index.ts'
import { brokers, uniqueName } from '../helpers/kafka.ts'
import { eventually } from '../helpers/wait.ts'
import { Collector, committedOffsets, createTopic, endOffsets, runnerOf, testLog } from './helpers.ts'

const kafka = new Kafka({ clientId: 'fetch-limits', brokers: brokers(), logLevel: logLevel.NOTHING })

async function withProducer<T>(
  options: { transactionalId?: string },
  use: (producer: Producer) => Promise<T>
): Promise<T> {
  const producer = kafka.producer({
    allowAutoTopicCreation: false,
    idempotent: true,
    maxInFlightRequests: 1,
    ...(options.transactionalId === undefined ? {} : { transactionalId: options.transactionalId })
  })
  await producer.connect()
  try {
    return await use(producer)
  } finally {
    await producer.disconnect()
  }
}

/** `count` records of `bytes` random (incompressible) bytes each, for one partition, in one produce: one batch. */
function batchOf(partition: number, count: number, bytes: number) {
  return Array.from({ length: count }, (_, i) => ({ partition, key: `p${partition}-${i}`, value: randomBytes(bytes) }))
}

/** Every offset of `[0, end)` of each partition a collector holds, as `partition:offset` ids. */
function idsOf(calls: ReadonlyArray<{ partition: number; offset: bigint }>): Set<string> {
  return new Set(calls.map(r => `${r.partition}:${r.offset}`))
}

function missingFrom(
  seen: ReadonlySet<string>,
  expected: ReadonlyArray<readonly [number, readonly bigint[]]>
): string[] {
  const missing: string[] = []
  for (const [partition, offsets] of expected) {
    for (const offset of offsets) if (!seen.has(`${partition}:${offset}`)) missing.push(`${partition}:${offset}`)
  }
  return missing
}

/** Data offsets per partition, [0, end) for a topic written without transactions. */
async function allOffsets(topic: string, partitions: number): Promise<Array<[number, bigint[]]>> {
  const ends = await endOffsets(topic, partitions)
  return ends.map((end, partition) => [partition, Array.from({ length: Number(end) }, (_, i) => BigInt(i))])
}

describe('fetch answers a real broker gives', () => {
  const cleanup: Array<() => Promise<unknown>> = []
  after(async () => {
    for (const c of cleanup.reverse()) await c().catch(() => undefined)
  })

  async function drain(
    topic: string,
    partitions: number,
    options: { ordering: 'ordered' | 'unordered'; fetchLimits?: FetchLimits; expected?: Array<[number, bigint[]]> }
  ): Promise<{ collector: Collector; lines: string[] }> {
    const collector = new Collector()
    const lines: string[] = []
    const runner = runnerOf(
      topic,
      collector.deliver,
      { ordering: options.ordering },
      { log: testLog(lines), ...(options.fetchLimits === undefined ? {} : { fetchLimits: options.fetchLimits }) }
    )
    cleanup.push(() => runner.close())
    const ends = await endOffsets(topic, partitions)
    await eventually(
      async () => {
        const committed = await committedOffsets(topic, topic, partitions)
        return committed.every((c, i) => c === ends[i]) ? true : undefined
      },
      60_000,
      `the group's commit at the log end of every partition of ${topic}`
    )
    await runner.close()
    const expected = options.expected ?? (await allOffsets(topic, partitions))
    const missing = missingFrom(idsOf(collector.calls), expected)
    assert.deepEqual(missing.slice(0, 20), [], `${missing.length} records committed but never delivered`)
    return { collector, lines }
  }

  for (const ordering of ['ordered', 'unordered'] as const) {
    it(`delivers batches larger than the per-partition limit on every partition (${ordering})`, async () => {
      // Six partitions each holding one ~800 KiB batch: 256 KiB per partition in a fetch, so only the first
      // partition with data gets its batch in an answer; the others are answered empty while they hold data.
      const topic = uniqueName(`big-batches-${ordering}`)
      await createTopic(topic, 6)
      await withProducer({}, async producer => {
        await producer.send({ topic, acks: -1, messages: [0, 1, 2, 3, 4, 5].flatMap(p => batchOf(p, 800, 1_000)) })
      })
      const { collector } = await drain(topic, 6, { ordering })
      assert.equal(collector.calls.length, 4_800, 'each record delivered once')
    })
  }

  it('delivers records up to the broker’s maximum size, and compressed batches larger than the limits', async () => {
    const topic = uniqueName('max-size')
    await createTopic(topic, 4)
    await withProducer({}, async producer => {
      // Records of ~1 MB, each its own batch (the broker's default maximum is 1 MiB a batch).
      for (let i = 0; i < 3; i++) {
        await producer.send({
          topic,
          acks: -1,
          messages: [0, 1].map(p => ({ partition: p, value: randomBytes(1_000_000) }))
        })
      }
      // gzip batches of incompressible records: the compressed batch (~600 KB) is past the partition limit.
      await producer.send({
        topic,
        acks: -1,
        compression: CompressionTypes.GZIP,
        messages: [2, 3].flatMap(p => batchOf(p, 600, 1_000))
      })
    })
    const { collector } = await drain(topic, 4, { ordering: 'unordered' })
    assert.equal(collector.calls.length, 1_206)
  })

  it("delivers every partition when the answer's total limit is used up by the others", async () => {
    // Batches that fit the per-partition limit, twelve of them past the total one: an answer fills up with the
    // first partitions' batches and answers the rest empty. Small limits, so the test writes little.
    const topic = uniqueName('total-limit')
    await createTopic(topic, 12)
    await withProducer({}, async producer => {
      for (let round = 0; round < 3; round++) {
        await producer.send({
          topic,
          acks: -1,
          messages: Array.from({ length: 12 }, (_, p) => batchOf(p, 40, 1_000)).flat()
        })
      }
    })
    const { collector } = await drain(topic, 12, {
      ordering: 'ordered',
      fetchLimits: { maxBytes: 96 * 1024, partitionMaxBytes: 64 * 1024 }
    })
    assert.equal(collector.calls.length, 12 * 120)
  })

  it('delivers the committed transactions among large aborted ones, and commits past the markers', async () => {
    const topic = uniqueName('big-tx')
    await createTopic(topic, 3)
    const committed: Array<[number, bigint[]]> = [
      [0, []],
      [1, []],
      [2, []]
    ]
    await withProducer({ transactionalId: `${topic}-tx` }, async producer => {
      for (let round = 0; round < 4; round++) {
        const tx = await producer.transaction()
        const sent = await tx.send({ topic, acks: -1, messages: [0, 1, 2].flatMap(p => batchOf(p, 300, 1_000)) })
        if (round % 2 === 0) {
          await tx.abort()
        } else {
          await tx.commit()
          for (const meta of sent) {
            const base = BigInt(meta.baseOffset ?? '0')
            committed[meta.partition]![1].push(...Array.from({ length: 300 }, (_, i) => base + BigInt(i)))
          }
        }
      }
    })
    // The last marker is written after commit() returns: wait until the log holds all 4 × 301 offsets.
    await eventually(
      async () => ((await endOffsets(topic, 3)).every(e => e === 1_204n) ? true : undefined),
      30_000,
      'four transactions and their markers'
    )
    const { collector } = await drain(topic, 3, { ordering: 'unordered', expected: committed })
    assert.equal(collector.calls.length, 1_800, 'the committed records only, each once')
  })
})

describe('the log tailer on answers a real broker gives', () => {
  it('reads every record of every partition when answers come back empty for partitions with data', async () => {
    const topic = uniqueName('tailer-limits')
    await createTopic(topic, 8)
    await withProducer({}, async producer => {
      await producer.send({
        topic,
        acks: -1,
        messages: Array.from({ length: 8 }, (_, p) => batchOf(p, 120, 1_000)).flat()
      })
    })
    const seen: LogRecord[] = []
    // 120 KB batches against 64 KiB per partition and 128 KiB in all: partition limits and the total limit both
    // leave partitions with data answered empty.
    const tailer = new LogTailer({
      connection: { brokers: brokers(), clientId: `${topic}-tailer` },
      topics: [topic],
      onRecord: r => seen.push(r),
      fetchLimits: { maxBytes: 128 * 1024, partitionMaxBytes: 64 * 1024 }
    })
    await tailer.start()
    try {
      await tailer.barrier([{ topic }], { timeoutMs: 60_000 })
      const missing = missingFrom(idsOf(seen), await allOffsets(topic, 8))
      assert.deepEqual(missing.slice(0, 20), [], `${missing.length} records skipped by the tailer`)
      assert.equal(seen.length, 960, 'each record once')
    } finally {
      await tailer.close()
    }
  })

  it('reads on from the log start when records below its position were deleted', async () => {
    const topic = uniqueName('tailer-deleted')
    await createTopic(topic, 2)
    await withProducer({}, async producer => {
      await producer.send({ topic, acks: -1, messages: [0, 1].flatMap(p => batchOf(p, 10, 100)) })
    })
    const admin = new Admin({ clientId: `${topic}-admin`, bootstrapBrokers: brokers() })
    try {
      await admin.deleteRecords({ topics: [{ name: topic, partitions: [{ partition: 0, offset: 5n }] }] })
    } finally {
      await admin.close()
    }
    const seen: LogRecord[] = []
    const tailer = new LogTailer({
      connection: { brokers: brokers(), clientId: `${topic}-tailer` },
      topics: [topic],
      onRecord: r => seen.push(r)
    })
    await tailer.start()
    try {
      await tailer.barrier([{ topic }], { timeoutMs: 30_000 })
      assert.equal(tailer.position(topic, 0), 10n)
      assert.deepEqual(
        seen.filter(r => r.partition === 0).map(r => r.offset),
        [5n, 6n, 7n, 8n, 9n]
      )
      assert.equal(seen.filter(r => r.partition === 1).length, 10, 'the other partition is read in the same answers')
    } finally {
      await tailer.close()
    }
  })
})
