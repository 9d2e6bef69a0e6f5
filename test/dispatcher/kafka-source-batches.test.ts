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

  it('delivers batches in batched mode; a refused batch is retried, then dead-lettered whole', async () => {
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
    await eventually(
      async () =>
        dls.received.length === 1 && delivered().length === keys.length - keysOf(dls.received[0]!.body).length
          ? true
          : undefined,
      60_000,
      'every record delivered or dead-lettered'
    )
    for (const request of [...main.received, ...dls.received]) {
      assert.equal(request.headers['content-type'], BATCH_CONTENT_TYPE)
    }
    const refused = main.received.filter(r => keysOf(r.body).includes('bad'))
    assert.equal(refused.length, 2, 'the first attempt and one retry, each the whole batch')
    const dead = JSON.parse(dls.received[0]!.body.toString()) as Array<Record<string, unknown>>
    assert.deepEqual(
      dead.map(e => e['key']),
      keysOf(refused[0]!.body),
      'the dead letter sink got the refused batch'
    )
    for (const e of dead) {
      assert.equal(e['knativeerrorcode'], '503')
      assert.deepEqual(e['data'], { k: e['key'] }, 'JSON data stays JSON')
    }
    assert.deepEqual(
      [...delivered(), ...dead.map(e => e['key'] as string)].sort(),
      [...keys].sort(),
      'each record once'
    )
    assert.deepEqual(
      delivered(),
      keys.filter(k => !dead.some(e => e['key'] === k)),
      'ordered: offset order across batches'
    )
  })
})
