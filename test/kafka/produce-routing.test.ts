// A send whose partitions were all led by one broker, after that broker died and its partitions moved to two
// different brokers. The client library retried each leader's group of records on the new leader of the group's
// first partition only, so the partitions that moved elsewhere were refused (NOT_LEADER_OR_FOLLOWER) on every retry
// until the send failed (the lab's broker-zone loss: the producer acknowledged again only after 10.6 s). Shoal's
// producer sends each record to its partition's current leader; the broker's log ends are the truth counted against.
import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { Admin, Consumer } from '@platformatic/kafka'
import { IsolationLevels, KafkaProducer } from '../../src/kafka/index.ts'
import { joinAnswers, splitByLeader } from '../../src/kafka/produce-routing.ts'
import { startEmbeddedKafka } from '../../src/kafka/embedded/index.ts'
import type { EmbeddedKafka } from '../../src/kafka/embedded/index.ts'
import { uniqueName } from '../helpers/kafka.ts'
import { eventually } from '../helpers/wait.ts'

const PARTITIONS = 6
const PER_PARTITION = 10

describe('routing produce requests by leader', () => {
  it('splits records by the leader of their partition, keeping unknown leaders where the library sent them', () => {
    const records = [0, 1, 2, 3, 4].map(partition => ({ topic: partition < 4 ? 't' : 'u', partition }))
    const leaders: Record<string, number | undefined> = { 't:0': 1, 't:1': 2, 't:2': 1, 't:3': undefined, 'u:4': 3 }
    const parts = splitByLeader(records, 2, (topic, partition) => leaders[`${topic}:${partition}`])
    assert.deepEqual(
      [...parts].map(([leader, part]) => [leader, part.map(r => `${r.topic}:${r.partition}`)]),
      [
        [1, ['t:0', 't:2']],
        [2, ['t:1', 't:3']],
        [3, ['u:4']]
      ]
    )
  })

  it('joins the parts’ answers into one, each topic once', () => {
    const answer = (name: string, partitions: number[], throttleTimeMs: number) => ({
      responses: [{ name, partitionResponses: partitions.map(index => ({ index })) }],
      throttleTimeMs
    })
    const joined = joinAnswers([answer('t', [0, 2], 0), answer('u', [4], 5), answer('t', [1], 1)])
    assert.deepEqual(joined, {
      responses: [
        { name: 't', partitionResponses: [{ index: 0 }, { index: 2 }, { index: 1 }] },
        { name: 'u', partitionResponses: [{ index: 4 }] }
      ],
      throttleTimeMs: 5
    })
  })
})

describe("a producer whose leader's partitions moved to two brokers", () => {
  let kafka: EmbeddedKafka | undefined
  after(async () => {
    await kafka?.stop()
  })

  it('has its next send acknowledged on every partition, without failing it', async () => {
    kafka = await startEmbeddedKafka({ brokers: 3, port: 0 })
    const all = [...kafka.bootstrapBrokers]
    const [lost, first, second] = kafka.brokers.map(b => b.nodeId) as [number, number, number]
    const topic = uniqueName('produce-routing')
    const admin = new Admin({ clientId: 'test-admin', bootstrapBrokers: all })
    const ends = new Consumer({ clientId: 'test-ends', groupId: uniqueName('unused'), bootstrapBrokers: all })
    // Every partition led by the broker that dies, its followers in turn, so that the partitions move apart.
    await admin.createTopics({
      topics: [topic],
      partitions: -1,
      replicas: -1,
      assignments: Array.from({ length: PARTITIONS }, (_, partition) => ({
        partition,
        brokers: partition % 2 ? [lost, first, second] : [lost, second, first]
      }))
    })
    const leaders = async () =>
      (await admin.metadata({ topics: [topic], forceUpdate: true })).topics.get(topic)?.partitions.map(p => p.leader)
    await eventually(async () => ((await leaders())?.every(l => l === lost) ? true : undefined), 60_000, 'led')
    // Few retries: the library's own retries on the wrong broker must not be what saves the send. Idempotent, as a
    // retry repeats the parts already written.
    const producer = new KafkaProducer({
      clientId: 'test-routing',
      bootstrapBrokers: all,
      idempotent: true,
      retries: 2,
      retryDelay: 200
    })
    const send = (round: number) =>
      producer.send({
        messages: Array.from({ length: PARTITIONS * PER_PARTITION }, (_, i) => ({
          topic,
          partition: i % PARTITIONS,
          value: Buffer.from(`${round}-${i}`)
        })),
        acks: -1
      })
    const logEnds = async () =>
      (await ends.listOffsets({ topics: [topic], isolationLevel: IsolationLevels.READ_UNCOMMITTED }))
        .get(topic)!
        .map(Number)
    try {
      // The cluster is new: its first answers to a producer id may be "not available yet".
      await eventually(async () => ((await send(0).catch(() => undefined)) ? true : undefined), 60_000, 'a first send')
      await kafka.killBroker(lost)
      await eventually(
        async () => {
          const now = await leaders()
          return now?.every(l => l !== lost && l > 0) && new Set(now).size === 2 ? true : undefined
        },
        60_000,
        'the partitions led by the two other brokers'
      )
      const before = await logEnds()
      await send(1)
      const written = (await logEnds()).map((end, partition) => end - before[partition]!)
      assert.deepEqual(
        written,
        Array.from({ length: PARTITIONS }, () => PER_PARTITION)
      )
    } finally {
      await producer.close()
      await ends.close()
      await admin.close()
    }
  })
})
