// Shoal's Kafka clients against brokers that answer nothing (a zone lost or cut off: no refusal, no reset). With the
// client's defaults a request on such a connection waited 30 s, and metadata was asked of the bootstrap brokers in
// the order given, so a lost first broker cost every client half a minute per refresh (docs/faults.md, the lab's
// broker-zone-loss of zone a: 97 s). Each test lists two silent brokers before the real one and waits less than
// one default request timeout: it fails with the client's defaults (docs/kafka.md, "Client timeouts").
import assert from 'node:assert/strict'
import { once } from 'node:events'
import { createServer } from 'node:net'
import type { AddressInfo, Server, Socket } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { Producer, kGetConnection } from '@platformatic/kafka'
import type { Broker } from '@platformatic/kafka'
import {
  KafkaConsumer,
  KafkaProducer,
  KafkaTimeouts,
  LogTailer,
  kafkaClientOptions,
  kafkaConnectionTimeouts,
  topicPartitions
} from '../../src/kafka/index.ts'
import type { KafkaConnection } from '../../src/kafka/index.ts'
import { brokers, createTopic, uniqueName } from '../helpers/kafka.ts'
import { eventually } from '../helpers/wait.ts'

/** The client library's own request timeout, which these tests must beat. */
const LIBRARY_REQUEST_TIMEOUT_MS = 30_000

describe('Kafka clients whose first brokers answer nothing', () => {
  // Each accepts connections and reads every request, answering none.
  const sockets = new Set<Socket>()
  const silent: Server[] = [0, 1].map(() =>
    createServer(socket => {
      sockets.add(socket)
      socket.on('data', () => {})
      socket.on('close', () => sockets.delete(socket))
    })
  )
  /** Connections the clients opened to the silent brokers and then gave up on. */
  let abandoned = 0
  let connection: KafkaConnection

  before(async () => {
    for (const server of silent) {
      server.on('connection', socket => socket.on('close', () => abandoned++))
      server.listen(0, '127.0.0.1')
      await once(server, 'listening')
    }
    const silentAddresses = silent.map(s => `127.0.0.1:${(s.address() as AddressInfo).port}`)
    connection = { brokers: [...silentAddresses, ...brokers()], clientId: uniqueName('silent') }
  })
  after(() => {
    for (const socket of sockets) socket.destroy()
    for (const server of silent) server.close()
  })

  it('an admin request gets its answer from the live broker', async () => {
    const topic = uniqueName('silent-admin')
    await createTopic(topic, { partitions: 3 })
    const started = Date.now()
    const counts = await withDeadline(topicPartitions(connection, [topic]), 'topicPartitions')
    assert.equal(counts.get(topic), 3)
    process.stdout.write(`# admin answered after ${Date.now() - started} ms, ${abandoned} silent connections dropped\n`)
  })

  it('a log tailer reads records written after it started', async () => {
    const topic = uniqueName('silent-tailer')
    await createTopic(topic)
    const seen: string[] = []
    const tailer = new LogTailer({
      connection,
      topics: [topic],
      onRecord: record => seen.push(record.value?.toString() ?? '')
    })
    const producer = new Producer({ ...kafkaClientOptions('test-silent-producer', brokers(), 'request') })
    try {
      await withDeadline(tailer.start(), 'tailer start')
      await producer.send({ messages: [{ topic, value: Buffer.from('after-start') }] })
      await eventually(
        async () => (seen.includes('after-start') ? true : undefined),
        LIBRARY_REQUEST_TIMEOUT_MS - 5_000,
        'the record read'
      )
    } finally {
      await producer.close()
      await tailer.close()
    }
  })
})

/** The promise's value, or a failure once one library request timeout has nearly passed. */
async function withDeadline<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`${what}: no answer within ${LIBRARY_REQUEST_TIMEOUT_MS - 5_000} ms`)),
      LIBRARY_REQUEST_TIMEOUT_MS - 5_000
    )
  })
  try {
    return await Promise.race([promise, deadline])
  } finally {
    clearTimeout(timer)
  }
}

// A request held by a broker that answers nothing fails once the broker turns suspect — its connections are dropped
// (src/kafka/clients.ts) — and is retried on a live broker, well before the client's own request timeout: 12 s for a
// group member, whose JoinGroup a coordinator may hold that long. A fresh silent broker, listed first and unknown to
// the process, so the client does ask it first.
describe('a group member whose first broker turns silent', () => {
  const sockets = new Set<Socket>()
  let closed = 0
  const silent = createServer(socket => {
    sockets.add(socket)
    socket.on('data', () => {})
    socket.on('close', () => (sockets.delete(socket), closed++))
  })
  after(() => {
    for (const socket of sockets) socket.destroy()
    silent.close()
  })

  it('gets its answer from the live broker before one of its request timeouts', async () => {
    silent.listen(0, '127.0.0.1')
    await once(silent, 'listening')
    const topic = uniqueName('silent-group')
    await createTopic(topic)
    const consumer = new KafkaConsumer({
      clientId: uniqueName('silent-group'),
      bootstrapBrokers: [`127.0.0.1:${(silent.address() as AddressInfo).port}`, ...brokers()],
      ...kafkaConnectionTimeouts('group'),
      groupId: uniqueName('silent-group'),
      retries: 3,
      retryDelay: 100
    })
    try {
      const started = Date.now()
      const metadata = await consumer.metadata({ topics: [topic] })
      const took = Date.now() - started
      assert.equal(metadata.topics.get(topic)?.partitionsCount, 1)
      assert.ok(closed >= 1, 'the connection to the silent broker was dropped')
      assert.ok(
        took < KafkaTimeouts.groupMs,
        `answered after ${took} ms: the request waited out its ${KafkaTimeouts.groupMs} ms timeout`
      )
    } finally {
      await consumer.close()
    }
  })
})

// The library asks for a connection to a broker its metadata does not know yet (a group's coordinator) as
// `undefined`, and answers that with stale-metadata error; Shoal's clients must pass it on, not throw (a controller
// crashed on it in the lab's broker zone loss).
it('a connection asked for a broker the metadata does not know is refused as stale metadata, not thrown', async () => {
  const producer = new KafkaProducer({ clientId: uniqueName('unknown-broker'), bootstrapBrokers: brokers() })
  try {
    const error = await new Promise<unknown>(resolve =>
      producer[kGetConnection](undefined as unknown as Broker, (e: unknown) => resolve(e))
    )
    assert.ok(error instanceof Error, String(error))
    assert.match(error.message, /not available in the current cluster metadata/)
  } finally {
    await producer.close()
  }
})
