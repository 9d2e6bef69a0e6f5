import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { Admin, Producer } from '@platformatic/kafka'
import { ensureTopics } from '../../src/kafka/index.ts'
import { startControllerProcess } from '../helpers/controllers.ts'
import { http } from '../helpers/http.ts'
import { brokers, uniqueName } from '../helpers/kafka.ts'
import { eventually } from '../helpers/wait.ts'

const KS = '/apis/sources.knative.dev/v1beta1/namespaces/default/kafkasources'

async function committedOffsets(group: string, topic: string): Promise<bigint[]> {
  const admin = new Admin({ clientId: 'io-test', bootstrapBrokers: brokers() })
  try {
    const [result] = await admin.listConsumerGroupOffsets({
      groups: [{ groupId: group, topics: [{ name: topic, partitionIndexes: [0, 1, 2] }] }]
    })
    const partitions = result?.topics.find(t => t.name === topic)?.partitions ?? []
    return [0, 1, 2].map(i => partitions.find(p => p.partitionIndex === i)?.committedOffset ?? -1n)
  } finally {
    await admin.close()
  }
}

describe('initial offsets', () => {
  it('are committed when a KafkaSource is created, at latest or earliest, before any consumer runs', async () => {
    const prefix = uniqueName('offsets')
    const topic = `${prefix}-topic`
    await ensureTopics({ brokers: brokers(), clientId: 'io-test' }, [{ name: topic, partitions: 3, configs: {} }])
    const producer = new Producer({ clientId: 'io-test', bootstrapBrokers: brokers(), idempotent: true })
    await producer.send({
      acks: -1,
      messages: [0, 1, 2, 0, 1].map((partition, i) => ({ topic, partition, value: Buffer.from(`r${i}`) }))
    })
    await producer.close()

    const controller = await startControllerProcess(prefix)
    try {
      for (const initialOffset of ['latest', 'earliest'] as const) {
        const name = `from-${initialOffset}`
        const created = await http(
          'POST',
          `${controller.url}${KS}`,
          `apiVersion: sources.knative.dev/v1beta1\nkind: KafkaSource\nmetadata: {name: ${name}}\nspec:\n  bootstrapServers: [${brokers().join(',')}]\n  topics: [${topic}]\n  consumers: 0\n  initialOffset: ${initialOffset}\n  sink: {uri: "http://127.0.0.1:9/"}\n`
        )
        assert.equal(created.status, 201, JSON.stringify(created.body))
        const source = await eventually(
          async () => {
            const s = (await http('GET', `${controller.url}${KS}/${name}`)).body
            const c = s.status.conditions.find((x: { type: string }) => x.type === 'InitialOffsetsCommitted')
            return c?.status === 'True' ? s : undefined
          },
          60_000,
          `${name}: InitialOffsetsCommitted`
        )
        const offsets = await committedOffsets(source.spec.consumerGroup, topic)
        assert.deepEqual(offsets, initialOffset === 'latest' ? [2n, 2n, 1n] : [0n, 0n, 0n])
      }
      // A topic that does not exist: the condition says why, and the source is not Ready.
      await http(
        'POST',
        `${controller.url}${KS}`,
        `apiVersion: sources.knative.dev/v1beta1\nkind: KafkaSource\nmetadata: {name: missing}\nspec:\n  bootstrapServers: [${brokers().join(',')}]\n  topics: [${topic}-missing]\n  sink: {uri: "http://127.0.0.1:9/"}\n`
      )
      const missing = await eventually(
        async () => {
          const s = (await http('GET', `${controller.url}${KS}/missing`)).body
          const c = s.status.conditions.find((x: { type: string }) => x.type === 'InitialOffsetsCommitted')
          return c?.status === 'False' ? s : undefined
        },
        60_000,
        'missing: InitialOffsetsCommitted=False'
      )
      const ready = missing.status.conditions.find((x: { type: string }) => x.type === 'Ready')
      assert.equal(ready.status, 'False')
      assert.match(JSON.stringify(missing.status.conditions), /Unknown topic|not exist/i)
    } finally {
      await controller.stop()
    }
  })
})
