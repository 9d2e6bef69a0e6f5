// A benchmark baseline, not product code: a Kafka-to-HTTP bridge written the way users write one by hand —
// one kafkajs consumer, `eachMessage`, and a `fetch` per record in binary CloudEvents mode, awaited before the
// next. kafkajs commits offsets on its own schedule (autoCommit). It runs until its parent disconnects.
//
//   forked by bench/kafka-source-throughput.ts: peer-kafkajs.ts --brokers H:P --topic T --group G --sink URL
import { parseArgs } from 'node:util'
import { Kafka, logLevel } from 'kafkajs'

const { values } = parseArgs({
  options: {
    brokers: { type: 'string' },
    topic: { type: 'string' },
    group: { type: 'string' },
    sink: { type: 'string' }
  }
})
const sink = values.sink!
const topic = values.topic!

const kafka = new Kafka({ clientId: 'peer-kafkajs', brokers: values.brokers!.split(','), logLevel: logLevel.ERROR })
const consumer = kafka.consumer({ groupId: values.group! })
await consumer.connect()
await consumer.subscribe({ topics: [topic], fromBeginning: true })
await consumer.run({
  eachMessage: async ({ partition, message }) => {
    const response = await fetch(sink, {
      method: 'POST',
      headers: {
        'content-type': 'application/octet-stream',
        'ce-specversion': '1.0',
        'ce-id': `partition:${partition}/offset:${message.offset}`,
        'ce-source': `/kafka/${topic}`,
        'ce-type': 'dev.knative.kafka.event'
      },
      body: message.value ?? Buffer.alloc(0)
    })
    // A failed delivery throws: kafkajs retries the message (and does not commit past it).
    if (!response.ok) throw new Error(`sink answered ${response.status}`)
    await response.arrayBuffer()
  }
})

process.on('disconnect', () => {
  void consumer.disconnect().finally(() => process.exit(0))
})
