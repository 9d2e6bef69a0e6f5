import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { Producer } from '@platformatic/kafka'
import { SourceRunner } from '../../src/kafka-source/index.ts'
import { brokers, uniqueName } from '../helpers/kafka.ts'
import { eventually } from '../helpers/wait.ts'
import { Collector, committedOffsets, createTopic, endOffsets, testLog } from './helpers.ts'

describe('SourceRunner on a transactional topic', () => {
  const cleanup: Array<() => Promise<unknown>> = []
  after(async () => {
    for (const c of cleanup.reverse()) await c().catch(() => undefined)
  })

  it('delivers committed transactions only, and commits past the markers (lag 0 once drained)', async () => {
    const topic = uniqueName('tx')
    await createTopic(topic, 1)
    const producer = new Producer({
      clientId: `${topic}-producer`,
      bootstrapBrokers: brokers(),
      transactionalId: `${topic}-tx`,
      idempotent: true,
      acks: -1
    })
    cleanup.push(() => producer.close())
    const send = async (values: string[], commit: boolean): Promise<void> => {
      const tx = await producer.beginTransaction({ producerId: -1n, producerEpoch: -1 })
      await tx.send({ messages: values.map(v => ({ topic, partition: 0, value: Buffer.from(v) })) })
      await (commit ? tx.commit() : tx.abort())
    }
    await send(['one', 'two'], true)
    await send(['aborted-1', 'aborted-2'], false)
    await send(['three'], true)
    await send(['aborted-3'], false)

    const collector = new Collector()
    const runner = new SourceRunner({
      brokers: brokers(),
      source: {
        key: `KafkaSource/default/${topic}`,
        groupId: topic,
        topics: [topic],
        initialOffset: 'earliest',
        ordering: 'ordered'
      },
      vreplicas: 1,
      dispatcherId: 'dispatcher-0',
      deliver: collector.deliver,
      log: testLog()
    })
    cleanup.push(() => runner.close())
    // The coordinator writes a transaction's marker after commit() or abort() returns: the last abort marker may
    // not be in the log yet, so wait for the end to count it.
    const end = await eventually(
      async () => {
        const [now] = await endOffsets(topic, 1)
        return now === 10n ? now : undefined
      },
      30_000,
      'six records and four markers'
    )
    assert.equal(end, 10n, 'six records and four markers')
    await eventually(
      async () => ((await committedOffsets(topic, topic, 1))[0] === end ? true : undefined),
      60_000,
      'the commit at the end of the log'
    )
    assert.deepEqual(
      collector.calls.map(r => r.value!.toString()),
      ['one', 'two', 'three']
    )
    assert.deepEqual(
      collector.calls.map(r => r.offset),
      [0n, 1n, 6n]
    )
  })
})
