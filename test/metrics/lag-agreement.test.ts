import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { Admin, Producer } from '@platformatic/kafka'
import { Autoscaler } from '../../src/autoscale/index.ts'
import type { AutoscaleTarget } from '../../src/autoscale/index.ts'
import { LagMonitor } from '../../src/metrics/index.ts'
import { brokers, createTopic, uniqueName } from '../helpers/kafka.ts'

/** The lag /metrics shows: one round of the controller's lag monitor. */
async function monitorLag(group: string, topic: string, initialOffset: 'earliest' | 'latest'): Promise<number> {
  const monitor = new LagMonitor({
    targets: () => [
      { query: { id: 'KafkaSource/ns/s', groupId: group, topics: [topic], brokers: brokers(), initialOffset } }
    ]
  })
  try {
    await monitor.measure()
    const reading = monitor.readings().get('KafkaSource/ns/s')
    assert.ok(reading, 'the monitor measured the source')
    return reading.lag
  } finally {
    await monitor.stop()
  }
}

/** The lag the autoscaler scales on (the same figure `shoal get -o wide` shows for a source it only observes). */
async function autoscalerLag(group: string, topic: string, initialOffset: 'earliest' | 'latest'): Promise<number> {
  const target: AutoscaleTarget = {
    key: 'KafkaSource/ns/s',
    annotations: undefined,
    paused: false,
    query: { id: 'KafkaSource/ns/s', brokers: brokers(), groupId: group, topics: [topic], initialOffset }
  }
  const autoscaler = new Autoscaler({
    targets: () => [target],
    recordedScale: () => undefined,
    onScale: () => undefined,
    log: () => undefined
  })
  autoscaler.start()
  try {
    const deadline = Date.now() + 20_000
    for (;;) {
      const status = autoscaler.status().find(s => s.source === target.key)
      if (status?.lag !== undefined) return status.lag
      assert.ok(Date.now() < deadline, `no lag reading: ${JSON.stringify(status)}`)
      await new Promise(resolve => setTimeout(resolve, 50))
    }
  } finally {
    await autoscaler.stop()
  }
}

describe('lag of a group with a partition it never committed', () => {
  const topic = uniqueName('lag-agree')
  const group = uniqueName('lag-agree-group')

  before(async () => {
    await createTopic(topic, { partitions: 2 })
    const producer = new Producer({ clientId: 'lag-agree', bootstrapBrokers: brokers(), idempotent: true })
    try {
      const messages = [0, 0, 0, 0, 0, 1, 1, 1].map(partition => ({ topic, partition, value: Buffer.from('x') }))
      await producer.send({ acks: -1, messages })
    } finally {
      await producer.close()
    }
    // Partition 0 committed at 2 (3 records behind); partition 1 never committed (3 records in it).
    const admin = new Admin({ clientId: 'lag-agree', bootstrapBrokers: brokers() })
    try {
      await admin.alterConsumerGroupOffsets({
        groupId: group,
        topics: [{ name: topic, partitionOffsets: [{ partition: 0, offset: 2n }] }]
      })
    } finally {
      await admin.close()
    }
  })

  after(async () => {
    const admin = new Admin({ clientId: 'lag-agree', bootstrapBrokers: brokers() })
    await admin.deleteGroups({ groups: [group] }).catch(() => undefined)
    await admin.deleteTopics({ topics: [topic] }).catch(() => undefined)
    await admin.close()
  })

  it('is the same in /metrics and for the autoscaler: from the log start when initialOffset is earliest', async () => {
    assert.equal(await monitorLag(group, topic, 'earliest'), 6)
    assert.equal(await autoscalerLag(group, topic, 'earliest'), 6)
  })

  it('is the same in /metrics and for the autoscaler: from the end when initialOffset is latest', async () => {
    assert.equal(await monitorLag(group, topic, 'latest'), 3)
    assert.equal(await autoscalerLag(group, topic, 'latest'), 3)
  })
})
