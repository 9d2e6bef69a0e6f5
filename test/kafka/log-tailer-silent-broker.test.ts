// A log tailer reading partitions led by three brokers, one of which goes silent (SIGSTOP: its kernel still accepts
// and holds requests; nothing answers — a broker lost with its zone). The tailer fetched in rounds that waited for
// every broker, so one silent broker stopped every partition for its request timeout and retries (about 20 s: the
// lab's zone cut, docs/faults.md). Each broker's fetch now goes on its own: the live brokers' records must arrive
// before one fetch request timeout has passed, and the silent broker's once it answers again.
import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { Admin, Producer } from '@platformatic/kafka'
import { KafkaTimeouts, LogTailer } from '../../src/kafka/index.ts'
import { startEmbeddedKafka } from '../../src/kafka/embedded/index.ts'
import type { EmbeddedKafka } from '../../src/kafka/embedded/index.ts'
import { uniqueName } from '../helpers/kafka.ts'
import { eventually } from '../helpers/wait.ts'

describe('a log tailer when one leader broker goes silent', () => {
  let kafka: EmbeddedKafka | undefined
  const stopped: number[] = []
  after(async () => {
    for (const pid of stopped) process.kill(pid, 'SIGCONT')
    await kafka?.stop()
  })

  it("reads on from the other brokers, and the silent one's partitions once it answers", async () => {
    kafka = await startEmbeddedKafka({ brokers: 3, port: 0 })
    const all = [...kafka.bootstrapBrokers]
    const topic = uniqueName('tailer-silent')
    const admin = new Admin({ clientId: 'test-admin', bootstrapBrokers: all })
    // One replica each, one partition per broker: a partition of the silent broker has nowhere else to go.
    await admin.createTopics({
      topics: [topic],
      partitions: -1,
      replicas: -1,
      assignments: kafka.brokers.map((b, partition) => ({ partition, brokers: [b.nodeId] }))
    })
    const leaders = await eventually(
      async () => {
        const partitions = (await admin.metadata({ topics: [topic], forceUpdate: true })).topics.get(topic)?.partitions
        return partitions?.length === 3 && partitions.every(p => p.leader > 0)
          ? partitions.map(p => p.leader)
          : undefined
      },
      60_000,
      'a leader for each partition'
    )
    await admin.close()
    const seen: string[] = []
    const tailer = new LogTailer({
      connection: { brokers: all, clientId: 'test-tailer-silent' },
      topics: [topic],
      onRecord: r => seen.push(`${r.partition}:${r.value?.toString()}`)
    })
    const producer = new Producer({ clientId: 'test-producer', bootstrapBrokers: all, acks: 1 })
    try {
      await tailer.start()
      const send = (partition: number, value: string) =>
        producer.send({ messages: [{ topic, partition, value: Buffer.from(value) }] })
      for (const p of [0, 1, 2]) await send(p, 'before')
      await eventually(async () => (seen.length === 3 ? true : undefined), 30_000, 'the first three records')

      const silent = kafka.brokers.find(b => b.nodeId === leaders[0])!
      process.kill(silent.pid!, 'SIGSTOP')
      stopped.push(silent.pid!)
      // Long enough for a fetch to be in flight to the silent broker when the records below are written.
      await new Promise(resolve => setTimeout(resolve, 1_000))
      const sentAt = Date.now()
      for (const p of [1, 2]) await send(p, 'during')
      await eventually(
        async () => (seen.includes('1:during') && seen.includes('2:during') ? true : undefined),
        60_000,
        "the live brokers' records"
      )
      const took = Date.now() - sentAt
      assert.ok(
        took < KafkaTimeouts.fetchMs,
        `the live brokers' records came ${took} ms after they were written: they waited for the silent broker's fetch`
      )
      assert.ok(!seen.includes('0:during'))

      process.kill(silent.pid!, 'SIGCONT')
      stopped.splice(0)
      await eventually(
        async () => {
          await send(0, 'after').catch(() => undefined)
          return seen.includes('0:after') ? true : undefined
        },
        60_000,
        "the silent broker's partition, once it answers"
      )
    } finally {
      await producer.close()
      await tailer.close()
    }
  })
})
