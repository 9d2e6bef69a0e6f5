// The broker the harness started (test/setup/kafka.ts) is a real Kafka: metadata, topics, produce, consume.
import { Admin, Consumer, Producer, ProduceAcks, stringDeserializers, stringSerializers } from '@platformatic/kafka'
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { brokers, createTopic, take, uniqueName } from '../helpers/kafka.ts'

test('the embedded broker answers a metadata request', async () => {
  const admin = new Admin({ clientId: uniqueName('metadata'), bootstrapBrokers: brokers() })
  try {
    const metadata = await admin.metadata({ topics: [] })
    assert.ok(metadata.brokers.size >= 1, 'at least one broker is listed')
    const addresses = [...metadata.brokers.values()].map(b => `${b.host}:${b.port}`)
    assert.ok(
      brokers().some(address => addresses.includes(address)),
      `the bootstrap address is one of ${addresses.join(', ')}`
    )
  } finally {
    await admin.close()
  }
})

test('a topic can be created, produced to and consumed from', async () => {
  const topic = uniqueName('embedded-roundtrip')
  await createTopic(topic, { partitions: 2 })

  // Idempotent: a send the client retries on a loaded machine (a timed-out request the broker did write) is
  // written once, not twice (seen in CI: 'one' at two offsets of partition 0).
  const producer = new Producer({
    clientId: uniqueName('producer'),
    bootstrapBrokers: brokers(),
    serializers: stringSerializers,
    idempotent: true
  })
  const sent = ['one', 'two', 'three'].map((value, i) => ({ topic, key: `key-${i}`, value, partition: i % 2 }))
  try {
    await producer.send({ acks: ProduceAcks.ALL, messages: sent })
  } finally {
    await producer.close()
  }

  const consumer = new Consumer({
    clientId: uniqueName('consumer'),
    groupId: uniqueName('group'),
    bootstrapBrokers: brokers(),
    deserializers: stringDeserializers,
    sessionTimeout: 6_000,
    heartbeatInterval: 1_000
  })
  let received: { key: string; value: string; partition: number }[]
  try {
    const stream = await consumer.consume({ topics: [topic], mode: 'earliest', autocommit: false })
    received = (await take(stream, sent.length)).map(m => ({ key: m.key, value: m.value, partition: m.partition }))
  } finally {
    await consumer.close(true)
  }
  assert.deepEqual(
    received.sort((a, b) => a.key.localeCompare(b.key)),
    sent.map(m => ({ key: m.key, value: m.value, partition: m.partition }))
  )
})

test('topics are not created by producing to them (auto.create.topics.enable=false)', async () => {
  const admin = new Admin({ clientId: uniqueName('no-autocreate'), bootstrapBrokers: brokers(), retries: 0 })
  const topic = uniqueName('never-created')
  try {
    await assert.rejects(admin.metadata({ topics: [topic], autocreateTopics: true }))
    const topics = await admin.listTopics()
    assert.ok(!topics.includes(topic))
  } finally {
    await admin.close()
  }
})
