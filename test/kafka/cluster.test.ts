// A separate three-broker cluster (not the harness's broker): replication 3, min ISR 2, and a broker killed with
// SIGKILL and started again without losing an acknowledged record. Takes about half a minute; set
// SHOAL_TEST_KAFKA_CLUSTER=0 to skip it.
import { Admin, Consumer, Producer, ProduceAcks, stringDeserializers, stringSerializers } from '@platformatic/kafka'
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { startEmbeddedKafka } from '../../src/kafka/embedded/index.ts'
import type { EmbeddedKafka } from '../../src/kafka/embedded/index.ts'
import { take, uniqueName } from '../helpers/kafka.ts'

const skip = process.env.SHOAL_TEST_KAFKA_CLUSTER === '0' ? 'SHOAL_TEST_KAFKA_CLUSTER=0' : false

let kafka: EmbeddedKafka

before(async () => {
  if (skip) return
  kafka = await startEmbeddedKafka({ brokers: 3 })
})

after(async () => {
  await kafka?.stop()
})

async function produce(topic: string, values: string[]): Promise<void> {
  const producer = new Producer({
    clientId: uniqueName('cluster-producer'),
    bootstrapBrokers: [...kafka.bootstrapBrokers],
    serializers: stringSerializers,
    // Idempotent: a batch retried across the failover is written once, not twice. It also implies acks=all;
    // @platformatic/kafka 2.12 ignores a non-idempotent Producer's own `acks` option in send() (acks=1 unless
    // send() is given acks), and acks=1 loses records when the leader is killed.
    idempotent: true,
    // Ride out a failover: the killed broker is fenced once its broker session times out, and its partitions get
    // new leaders; until then a send to them fails and is retried (15 s in all, for a loaded machine).
    retries: 30,
    retryDelay: 500
  })
  try {
    await producer.send({ acks: ProduceAcks.ALL, messages: values.map(value => ({ topic, key: value, value })) })
  } finally {
    await producer.close()
  }
}

test('three brokers: replication 3, and a killed broker loses no acknowledged record', { skip }, async () => {
  assert.equal(kafka.brokers.length, 3)
  assert.equal(kafka.bootstrap.split(',').length, 3)
  assert.ok(kafka.brokers.every(b => b.running && b.pid !== undefined))

  const topic = uniqueName('cluster')
  const admin = new Admin({ clientId: uniqueName('cluster-admin'), bootstrapBrokers: [...kafka.bootstrapBrokers] })
  try {
    const metadata = await admin.metadata({ topics: [] })
    assert.deepEqual([...metadata.brokers.keys()].sort(), [1, 2, 3])
    // No replication factor given: the cluster's default.replication.factor (3) applies.
    await admin.createTopics({ topics: [topic], partitions: 3 })
    const described = await admin.metadata({ topics: [topic], forceUpdate: true })
    for (const partition of described.topics.get(topic)?.partitions ?? []) {
      assert.equal(partition.replicas.length, 3)
    }
  } finally {
    await admin.close()
  }

  await produce(topic, ['a', 'b', 'c'])
  await kafka.killBroker(2)
  assert.equal(kafka.brokers.find(b => b.nodeId === 2)?.running, false)
  // acks=all with min.insync.replicas=2 still succeeds with two of three brokers.
  await produce(topic, ['d', 'e', 'f'])
  await kafka.startBroker(2)
  assert.equal(kafka.brokers.find(b => b.nodeId === 2)?.running, true)

  const consumer = new Consumer({
    clientId: uniqueName('cluster-consumer'),
    groupId: uniqueName('cluster-group'),
    bootstrapBrokers: [...kafka.bootstrapBrokers],
    deserializers: stringDeserializers,
    sessionTimeout: 6_000,
    heartbeatInterval: 1_000
  })
  let received: string[]
  try {
    const stream = await consumer.consume({ topics: [topic], mode: 'earliest', autocommit: false })
    received = (await take(stream, 6, 60_000)).map(message => message.value)
  } finally {
    await consumer.close(true)
  }
  assert.deepEqual(received.sort(), ['a', 'b', 'c', 'd', 'e', 'f'])
})
