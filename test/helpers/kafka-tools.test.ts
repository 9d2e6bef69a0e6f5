// Kafka's GetOffsetShell as the lab drills read it (test/helpers/kafka-tools.ts): each partition's end offset, as
// many records as were written to it.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { KafkaProducer } from '../../src/kafka/index.ts'
import { brokers, createTopic, uniqueName } from './kafka.ts'
import { topicEndOffsets } from './kafka-tools.ts'

describe("Kafka's GetOffsetShell", () => {
  it('reads the end offset of every partition', async () => {
    const topic = uniqueName('end-offsets')
    await createTopic(topic, { partitions: 3 })
    const written = [0, 2, 2, 0, 2]
    // Idempotent: a send whose first attempt was refused for one partition (a leader not known yet on a new topic) is
    // sent again whole, and without sequence numbers the partitions that had taken it would hold it twice.
    const producer = new KafkaProducer({ clientId: 'end-offsets', bootstrapBrokers: brokers(), idempotent: true })
    try {
      await producer.send({
        messages: written.map(partition => ({ topic, partition, value: Buffer.from(String(partition)) }))
      })
    } finally {
      await producer.close()
    }
    const ends = await topicEndOffsets(brokers().join(','), topic)
    assert.deepEqual(
      [...ends].sort(([a], [b]) => a - b),
      [
        [0, 2],
        [1, 0],
        [2, 3]
      ]
    )
  })
})
