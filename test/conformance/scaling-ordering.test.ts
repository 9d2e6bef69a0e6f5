// Knative's KEDA scaling and ordered-delivery assertions for a KafkaSource, against one `shoal controller` and one
// `shoal dispatcher` process, records from confluent-kafka, events through the CloudEvents Python SDK sink.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { startControllerProcess } from '../helpers/controllers.ts'
import type { ControllerProcess } from '../helpers/controllers.ts'
import { startDispatcherProcess } from '../helpers/dispatchers.ts'
import type { DispatcherProcess } from '../helpers/dispatchers.ts'
import { http } from '../helpers/http.ts'
import { brokers, createTopic, uniqueName } from '../helpers/kafka.ts'
import { eventually } from '../helpers/wait.ts'
import { describeGroup } from '../kafka-source/helpers.ts'
import { isReady, producePython, statusOf, tracingSink } from './helpers.ts'
import type { ProducedRecord } from './helpers.ts'

const KS = '/apis/sources.knative.dev/v1/namespaces/default/kafkasources'
const LIVENESS = ['--liveness-timeout', '3s']

describe('Knative KafkaSource scaling and ordering conformance', () => {
  let controller: ControllerProcess
  let dispatcher: DispatcherProcess
  let prefix: string
  before(async () => {
    prefix = uniqueName('conf-scale')
    controller = await startControllerProcess(prefix, LIVENESS)
    dispatcher = await startDispatcherProcess(prefix, 'dispatcher-0', 'a', 'a-1', 10, LIVENESS)
  })
  after(async () => {
    await controller?.stop()
    await dispatcher?.stop()
  })

  async function create(
    name: string,
    topic: string,
    sinkUrl: string,
    extra: string,
    annotations = ''
  ): Promise<string> {
    const body =
      `apiVersion: sources.knative.dev/v1\nkind: KafkaSource\nmetadata:\n  name: ${name}\n${annotations}spec:\n` +
      `  bootstrapServers: [${brokers().join(',')}]\n  topics: [${topic}]\n  consumerGroup: ${topic}-group\n` +
      `  sink: {uri: "${sinkUrl}"}\n${extra}`
    const created = await http('POST', `${controller.url}${KS}`, body)
    assert.equal(created.status, 201, JSON.stringify(created.body))
    return `${controller.url}${KS}/${name}`
  }

  it('KafkaSourceScalesToZeroWithKeda: "Source should start with replicas = 0", "eventshub receiver gets event" Exact(1), Must "Scale down to zero" (eventing-kafka-broker test/rekt/features/keda_scaling.go)', async () => {
    const sink = await tracingSink()
    try {
      const topic = `${prefix}-keda`
      await createTopic(topic, { partitions: 3 })
      const url = await create(
        'keda',
        topic,
        sink.url,
        '',
        '  annotations:\n    autoscaling.eventing.knative.dev/class: keda.autoscaling.knative.dev\n' +
          '    autoscaling.eventing.knative.dev/cooldown-period: "2"\n'
      )
      // Starts with 0 replicas: Ready, nothing placed, no member in the group.
      await eventually(
        async () => {
          const s = await statusOf(url)
          return isReady(s) && s['desiredConsumers'] === 0 && (s['consumers'] ?? 0) === 0
        },
        60_000,
        'Ready at 0 consumers'
      )
      assert.equal((await describeGroup(`${topic}-group`, topic)).members.size, 0)
      const id = uniqueName('keda-event')
      await producePython(topic, [
        { value: '{}', headers: { ce_specversion: '1.0', ce_type: 'keda.test', ce_source: 'conformance', ce_id: id } }
      ])
      await eventually(() => sink.arrived.some(e => e['id'] === id), 60_000, 'the event at the sink')
      // Back to zero after the cooldown; by then any redelivery would have happened: exactly one arrived.
      await eventually(
        async () => {
          const s = await statusOf(url)
          return s['desiredConsumers'] === 0 && s['consumers'] === 0
        },
        60_000,
        'scaled back to 0'
      )
      await eventually(
        async () => (await describeGroup(`${topic}-group`, topic)).members.size === 0,
        30_000,
        'group empty'
      )
      assert.equal(sink.arrived.filter(e => e['id'] === id).length, 1, 'delivered exactly once')
    } finally {
      await sink.stop()
    }
  })

  it("MultiplePartitionOrderedDelivery: \"receive events keyed 'a'/'b'/'c' in order\" — 20 events per key 100 ms apart, a sink answering in 100 ms (eventing-kafka-broker test/e2e_new/ordered_test.go)", async () => {
    // Knative runs it through a Broker and Trigger with delivery.order ordered; Shoal's counterpart is a
    // KafkaSource with ordering: ordered, the partition key as the record key.
    const sink = await tracingSink(['--delay-ms', '100'])
    try {
      const topic = `${prefix}-ordered`
      await createTopic(topic, { partitions: 3 })
      const url = await create('ordered', topic, sink.url, '  ordering: ordered\n')
      await eventually(async () => isReady(await statusOf(url)), 60_000, 'Ready')
      await eventually(
        async () => (await describeGroup(`${topic}-group`, topic)).members.size === 1,
        60_000,
        'group joined'
      )
      const keys = ['a', 'b', 'c']
      const records: ProducedRecord[] = []
      for (let sequence = 1; sequence <= 20; sequence++) {
        for (const key of keys) {
          records.push({
            key,
            value: '{}',
            headers: {
              ce_specversion: '1.0',
              ce_type: 'ordered.test',
              ce_source: 'conformance',
              ce_id: `${key}-${sequence}`,
              ce_partitionkey: key,
              ce_sequence: String(sequence)
            }
          })
        }
      }
      // Each key's 20 events 100 ms apart (the three keys interleaved, as Knative's three senders run at once).
      await producePython(topic, records, { intervalMs: 100 / keys.length })
      for (const key of keys) {
        const sequences = await eventually(
          () => {
            const seen = sink.arrived.filter(e => e['partitionkey'] === key).map(e => Number(e['sequence']))
            return seen.length >= 20 ? seen : undefined
          },
          60_000,
          `20 events keyed ${key}`
        )
        assert.deepEqual(
          sequences,
          Array.from({ length: 20 }, (_, i) => i + 1),
          `key ${key} in order`
        )
      }
    } finally {
      await sink.stop()
    }
  })
})
