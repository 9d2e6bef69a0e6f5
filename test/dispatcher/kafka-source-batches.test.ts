import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { Producer } from '@platformatic/kafka'
import { BATCH_CONTENT_TYPE } from '../../src/delivery/index.ts'
import { ensureTopics } from '../../src/kafka/index.ts'
import { startControllerProcess } from '../helpers/controllers.ts'
import type { ControllerProcess } from '../helpers/controllers.ts'
import { startDispatcherProcess } from '../helpers/dispatchers.ts'
import type { DispatcherProcess } from '../helpers/dispatchers.ts'
import { http } from '../helpers/http.ts'
import { brokers, uniqueName } from '../helpers/kafka.ts'
import { eventually } from '../helpers/wait.ts'
import { startSink } from '../delivery/sink-server.ts'
import type { TestSink } from '../delivery/sink-server.ts'

// Batched delivery through the whole system: a KafkaSource with the batch annotations, applied through the API
// and run by a `shoal dispatcher` process, against real sinks.

const KS = '/apis/sources.knative.dev/v1beta1/namespaces/default/kafkasources'

/** The Kafka keys of a batch body's events, in order. */
function keysOf(body: Buffer): string[] {
  return (JSON.parse(body.toString()) as Array<{ key: string }>).map(e => e.key)
}

describe('a KafkaSource with delivery.shoal.dev/batch-max-events', () => {
  const prefix = uniqueName('batches')
  const topic = `${prefix}-topic`
  let controller: ControllerProcess
  let dispatcher: DispatcherProcess
  const sinks: TestSink[] = []

  before(async () => {
    await ensureTopics({ brokers: brokers(), clientId: 'batches' }, [{ name: topic, partitions: 1, configs: {} }])
    controller = await startControllerProcess(prefix)
    dispatcher = await startDispatcherProcess(prefix, 'dispatcher-0', 'a', 'a-1', 10)
  })
  after(async () => {
    await controller?.stop()
    await dispatcher?.stop()
    for (const s of sinks) await s.close()
  })

  it('delivers batches in batched mode; a refused batch is retried, then dead-lettered event by event', async () => {
    // Any batch holding the record keyed `bad` is refused with 503, every time.
    const main = await startSink(request => ({ status: keysOf(request.body).includes('bad') ? 503 : 200 }))
    const dls = await startSink(() => ({ status: 200 }))
    sinks.push(main, dls)
    const manifest = [
      'apiVersion: sources.knative.dev/v1beta1',
      'kind: KafkaSource',
      'metadata:',
      '  name: batched',
      '  annotations:',
      '    delivery.shoal.dev/batch-max-events: "20"',
      '    delivery.shoal.dev/batch-max-wait: PT0.1S',
      'spec:',
      `  bootstrapServers: [${brokers().join(',')}]`,
      `  topics: [${topic}]`,
      '  initialOffset: earliest',
      '  ordering: ordered',
      `  sink: {uri: "${main.url}"}`,
      '  delivery:',
      '    retry: 1',
      '    backoffDelay: PT0.05S',
      `    deadLetterSink: {uri: "${dls.url}"}`,
      ''
    ].join('\n')
    const created = await http('POST', `${controller.url}${KS}`, manifest)
    assert.equal(created.status, 201, JSON.stringify(created.body))
    const keys = Array.from({ length: 100 }, (_, i) => (i === 50 ? 'bad' : `k${i}`))
    const producer = new Producer({ clientId: 'batches', bootstrapBrokers: brokers(), idempotent: true })
    try {
      await producer.send({
        acks: -1,
        messages: keys.map(key => ({
          topic,
          partition: 0,
          key: Buffer.from(key),
          value: Buffer.from(`{"k":"${key}"}`)
        }))
      })
    } finally {
      await producer.close()
    }
    const delivered = (): string[] =>
      main.received.filter(r => !keysOf(r.body).includes('bad')).flatMap(r => keysOf(r.body))
    const refused = (): string[] => {
      const first = main.received.find(r => keysOf(r.body).includes('bad'))
      return first === undefined ? [] : keysOf(first.body)
    }
    await eventually(
      async () =>
        refused().length > 0 &&
        dls.received.length === refused().length &&
        delivered().length === keys.length - refused().length
          ? true
          : undefined,
      60_000,
      'every record delivered or dead-lettered'
    )
    for (const request of main.received) assert.equal(request.headers['content-type'], BATCH_CONTENT_TYPE)
    const tries = main.received.filter(r => keysOf(r.body).includes('bad'))
    assert.equal(tries.length, 2, 'the first attempt and one retry, each the whole batch')
    // The dead letter sink gets the refused batch's events one by one, in order, in binary mode.
    assert.deepEqual(
      dls.received.map(r => r.headers['ce-key'] ?? r.headers['ce-partitionkey']),
      refused(),
      'the dead letter sink got the refused batch'
    )
    for (const r of dls.received) {
      assert.notEqual(r.headers['content-type'], BATCH_CONTENT_TYPE)
      assert.equal(r.headers['ce-knativeerrorcode'], '503')
      assert.deepEqual(JSON.parse(r.body.toString()), { k: r.headers['ce-key'] }, 'JSON data stays JSON')
    }
    assert.deepEqual([...delivered(), ...refused()].sort(), [...keys].sort(), 'each record once')
    assert.deepEqual(
      delivered(),
      keys.filter(k => !refused().includes(k)),
      'ordered: offset order across batches'
    )
  })
})
