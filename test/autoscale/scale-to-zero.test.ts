import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { ensureTopics } from '../../src/kafka/index.ts'
import { startControllerProcess } from '../helpers/controllers.ts'
import { http } from '../helpers/http.ts'
import { brokers, uniqueName } from '../helpers/kafka.ts'
import { eventually } from '../helpers/wait.ts'
import { startDispatcherProcess } from '../helpers/dispatchers.ts'
import { KS, RecordingProducer, cli, condition, countingSink, kafkaSource, sourceAt } from './harness.ts'

const LIVENESS = ['--liveness-timeout', '3s']

describe('an autoscaled KafkaSource', () => {
  it('goes to 0 vreplicas after its cooldown, and one record wakes it and reaches the sink', async () => {
    const prefix = uniqueName('zero')
    const topic = `${prefix}-topic`
    await ensureTopics({ brokers: brokers(), clientId: 'zero' }, [{ name: topic, partitions: 3, configs: {} }])
    const sink = await countingSink()
    const producer = new RecordingProducer()
    const controller = await startControllerProcess(prefix, LIVENESS)
    const dispatcher = await startDispatcherProcess(prefix, 'dispatcher-0', 'a', 'a-1', 10, LIVENESS)
    try {
      const created = await http(
        'POST',
        `${controller.url}${KS}`,
        kafkaSource('idle', topic, sink.url, {
          annotations: {
            'autoscaling.eventing.knative.dev/class': 'keda.autoscaling.knative.dev',
            'autoscaling.eventing.knative.dev/lag-threshold': '10',
            'autoscaling.eventing.knative.dev/cooldown-period': '2'
          }
        })
      )
      assert.equal(created.status, 201, JSON.stringify(created.body))
      // Created at min-scale 0: nothing placed, the initial offsets committed so a waking record is not skipped.
      await eventually(
        async () => {
          const s = await sourceAt(controller.url, 'idle')
          return condition(s, 'InitialOffsetsCommitted') === 'True' &&
            condition(s, 'Ready') === 'True' &&
            s.status.desiredConsumers === 0
            ? true
            : undefined
        },
        60_000,
        'the source Ready at 0 vreplicas'
      )

      const [first] = await producer.produce(topic, 3, 1)
      await eventually(async () => (sink.seen.has(first!) ? true : undefined), 60_000, 'the first record at the sink')
      const woken = await sourceAt(controller.url, 'idle')
      assert.equal(woken.status.scaledBy, 'autoscaler')

      // Idle for the cooldown: back to 0, and no consumer left on the dispatcher.
      await eventually(
        async () => {
          const s = await sourceAt(controller.url, 'idle')
          return s.status.desiredConsumers === 0 && s.status.consumers === 0 ? s : undefined
        },
        60_000,
        'the source back at 0 vreplicas'
      )
      const wide = await cli(controller.url, 'get', 'kafkasources', '-o', 'wide')
      assert.equal(wide.code, 0, wide.stderr)
      const [header, row] = wide.stdout.trim().split('\n')
      const columns = header!.split(/\s{2,}/)
      const cells = row!.split(/\s{2,}/)
      assert.deepEqual([columns.at(-3), columns.at(-2), columns.at(-1)], ['LAG', 'DESIRED', 'PLACED'])
      assert.deepEqual([cells.at(-2), cells.at(-1)], ['0', '0'])

      // One record wakes it, and it reaches the sink.
      const [second] = await producer.produce(topic, 3, 1)
      await eventually(async () => (sink.seen.has(second!) ? true : undefined), 60_000, 'the waking record at the sink')
      const awake = await sourceAt(controller.url, 'idle')
      assert.equal(condition(awake, 'Autoscaled'), 'True')
      assert.deepEqual([...sink.seen.keys()].sort(), [first, second].sort())
    } finally {
      await producer.close()
      await controller.stop()
      await dispatcher.stop()
      await sink.close()
    }
  })
})
