import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { ensureTopics } from '../../src/kafka/index.ts'
import { startControllerProcess } from '../helpers/controllers.ts'
import type { ControllerProcess } from '../helpers/controllers.ts'
import { http } from '../helpers/http.ts'
import { brokers, uniqueName } from '../helpers/kafka.ts'
import { eventually } from '../helpers/wait.ts'
import { describeGroup } from '../kafka-source/helpers.ts'
import { startDispatcherProcess } from '../helpers/dispatchers.ts'
import type { DispatcherProcess } from '../helpers/dispatchers.ts'
import { KS, RecordingProducer, cli, condition, countingSink, kafkaSource, sourceAt } from './harness.ts'
import type { CountingSink } from './harness.ts'

const LIVENESS = ['--liveness-timeout', '3s']
const PARTITIONS = 2

/** Total lag as `shoal offsets -o json` reports it. */
async function totalLag(server: string, name: string): Promise<number> {
  const answer = await cli(server, 'offsets', 'kafkasource', name, '-o', 'json')
  assert.equal(answer.code, 0, answer.stderr)
  return (JSON.parse(answer.stdout) as { totalLag: number }).totalLag
}

describe('operating a KafkaSource', () => {
  const prefix = uniqueName('operate')
  const topic = `${prefix}-topic`
  let sink: CountingSink
  let producer: RecordingProducer
  let controller: ControllerProcess
  let dispatcher: DispatcherProcess

  before(async () => {
    await ensureTopics({ brokers: brokers(), clientId: 'operate' }, [
      { name: topic, partitions: PARTITIONS, configs: {} }
    ])
    sink = await countingSink()
    producer = new RecordingProducer()
    controller = await startControllerProcess(prefix, LIVENESS)
    dispatcher = await startDispatcherProcess(prefix, 'dispatcher-0', 'a', 'a-1', 10, LIVENESS)
    const created = await http(
      'POST',
      `${controller.url}${KS}`,
      kafkaSource('orders', topic, sink.url, { consumers: 1, initialOffset: 'earliest' })
    )
    assert.equal(created.status, 201, JSON.stringify(created.body))
    await eventually(
      async () => (condition(await sourceAt(controller.url, 'orders'), 'Ready') === 'True' ? true : undefined),
      60_000,
      'the source Ready'
    )
  })

  after(async () => {
    await producer.close()
    await controller.stop()
    await dispatcher.stop()
    await sink.close()
  })

  it('refuses an offsets reset while the source runs, naming what to do', async () => {
    const refused = await cli(controller.url, 'offsets', 'kafkasource', 'orders', '--reset', 'earliest')
    assert.equal(refused.code, 1)
    assert.match(refused.stderr, /not paused.*shoal pause kafkasource orders/)
    const bad = await cli(controller.url, 'offsets', 'kafkasource', 'orders', '--reset', 'yesterday')
    assert.equal(bad.code, 1)
    assert.match(bad.stderr, /reset: must be earliest, latest/)
  })

  it('paused, delivers nothing and loses nothing; resumed, carries on from where it stopped', async () => {
    const firstBatch = await producer.produce(topic, PARTITIONS, 40)
    await eventually(
      async () => (firstBatch.every(id => sink.seen.has(id)) ? true : undefined),
      60_000,
      'the first batch'
    )

    const paused = await cli(controller.url, 'pause', 'kafkasource', 'orders')
    assert.equal(paused.code, 0, paused.stderr)
    assert.match(paused.stdout, /orders paused/)
    await eventually(
      async () => {
        const s = await sourceAt(controller.url, 'orders')
        return condition(s, 'Paused') === 'True' && s.status.consumers === 0 ? true : undefined
      },
      60_000,
      'the source paused with no consumer'
    )
    // Placed nowhere is the scheduler's word; the dispatcher still has to read its contract, stop its member,
    // commit what it delivered and leave the group. Until the group is empty it may still take records.
    const group = (await http('GET', `${controller.url}${KS}/orders`)).body.spec.consumerGroup as string
    await eventually(
      async () => ((await describeGroup(group, topic)).members.size === 0 ? true : undefined),
      60_000,
      'the consumer group empty'
    )
    const deliveredBefore = sink.order.length
    const whilePaused = await producer.produce(topic, PARTITIONS, 30)
    // The records wait in Kafka: the group's lag shows them all, again and again, and the sink sees none.
    for (let i = 0; i < 5; i++) {
      assert.equal(await totalLag(controller.url, 'orders'), whilePaused.length)
    }
    assert.equal(sink.order.length, deliveredBefore)
    assert.equal(
      whilePaused.some(id => sink.seen.has(id)),
      false
    )

    const resumed = await cli(controller.url, 'resume', 'kafkasource', 'orders')
    assert.equal(resumed.code, 0, resumed.stderr)
    await eventually(
      async () => (whilePaused.every(id => sink.seen.has(id)) ? true : undefined),
      60_000,
      'the records produced while paused'
    )
    // Carried on from its committed offsets: what was delivered before the pause came once.
    assert.equal(
      firstBatch.every(id => sink.seen.get(id) === 1),
      true
    )
    await eventually(async () => ((await totalLag(controller.url, 'orders')) === 0 ? true : undefined), 60_000, 'lag 0')
  })

  it('moves the offsets of a paused source: reset to earliest delivers everything again', async () => {
    const before = new Map(sink.seen)
    assert.equal((await cli(controller.url, 'pause', 'ks/orders')).code, 0)
    const reset = await eventually(
      async () => {
        const answer = await cli(controller.url, 'offsets', 'kafkasource', 'orders', '--reset', 'earliest')
        // Refused while the members are still leaving; retried until the group is empty.
        return answer.code === 0 ? answer : undefined
      },
      60_000,
      'the reset accepted'
    )
    assert.match(reset.stdout, /offsets reset to earliest/)
    assert.equal(await totalLag(controller.url, 'orders'), producer.produced.size)
    assert.equal((await cli(controller.url, 'resume', 'kafkasource', 'orders')).code, 0)
    await eventually(
      async () => ([...before.keys()].every(id => (sink.seen.get(id) ?? 0) > before.get(id)!) ? true : undefined),
      60_000,
      'every record delivered again'
    )
  })

  it('shows the last delivery error in the source’s status', async () => {
    sink.answer(503)
    const [failing] = await producer.produce(topic, PARTITIONS, 1)
    const error = await eventually(
      async () => (await sourceAt(controller.url, 'orders')).status.lastDeliveryError,
      60_000,
      'the delivery error in the status'
    )
    assert.match(error.message, /the sink answered 503/)
    assert.equal(error.dispatcher, 'dispatcher-0')
    sink.answer(202)
    await eventually(
      async () => (sink.seen.has(failing!) ? true : undefined),
      60_000,
      'the record after the sink recovers'
    )
  })
})
