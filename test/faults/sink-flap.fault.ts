// Drill: a sink that flaps while records stream — up, answering 503, resetting connections, refusing
// connections (not listening) — over and over. Two sources read the same topic: `with-dls` has a dead letter
// sink, `without-dls` has none. The sink also refuses one id in 50 with a 400, which Shoal does not retry: for
// `with-dls` those go to the dead letter sink, for `without-dls` they are dropped by the drop policy (and
// counted in the dispatcher's shoal_source_events_dropped_total). Everything else is retried until the sink
// takes it: nothing lost.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { ensureTopics } from '../../src/kafka/index.ts'
import { startControllerProcess } from '../helpers/controllers.ts'
import type { ControllerProcess } from '../helpers/controllers.ts'
import { brokers, uniqueName } from '../helpers/kafka.ts'
import { eventually } from '../helpers/wait.ts'
import { startDispatcherProcess } from '../helpers/dispatchers.ts'
import type { DispatcherProcess } from '../helpers/dispatchers.ts'
import {
  CountingSink,
  IdProducer,
  LIVENESS,
  createSource,
  metricSum,
  report,
  settle,
  sleep,
  waitReady
} from './harness.ts'
import type { SinkMode } from './harness.ts'

const PARTITIONS = 6
const RECORDS = 2_000
/** Ids the sink refuses with a 400 (not retried): `sink-flap-7`, `sink-flap-57`, … */
const refused = (id: string): boolean => Number(id.slice(id.lastIndexOf('-') + 1)) % 50 === 7
/** One flap cycle: how the sink answers, and for how long. */
const CYCLE: ReadonlyArray<readonly [SinkMode, number]> = [
  ['up', 1_500],
  ['5xx', 1_500],
  ['up', 1_500],
  ['reset', 1_000],
  ['up', 1_500],
  ['closed', 1_500]
]

describe('drill: a sink that flaps (503, connection resets, connection refused)', () => {
  it('retries until the sink takes each event; refusals go to the dead letter sink or are dropped by policy', async () => {
    const prefix = uniqueName('drill-sink')
    const topic = `${prefix}-topic`
    await ensureTopics({ brokers: brokers(), clientId: 'drill' }, [
      { name: topic, partitions: PARTITIONS, configs: {} }
    ])
    const sink = await new CountingSink(refused).start()
    const deadLetter = await new CountingSink().start()
    const producer = new IdProducer('sink-flap', topic, PARTITIONS)
    let controller: ControllerProcess | undefined
    let dispatcher: DispatcherProcess | undefined
    let flapping = true
    let cycles = 0
    let flapped: Promise<void> = Promise.resolve()
    try {
      controller = await startControllerProcess(prefix, LIVENESS)
      dispatcher = await startDispatcherProcess(prefix, 'dispatcher-0', 'a', 'a-1', 10, [
        ...LIVENESS,
        '--metrics-port',
        '0'
      ])
      // 30 retries, 0.5 s × n apart (linear): about 4 minutes before an event would be given up on, far longer
      // than any outage of the cycle.
      await createSource(controller.url, {
        name: 'with-dls',
        topic,
        sink: sink.url('with-dls'),
        deadLetterSink: deadLetter.url('with-dls'),
        consumers: 2,
        retry: 30
      })
      await createSource(controller.url, {
        name: 'without-dls',
        topic,
        sink: sink.url('without-dls'),
        consumers: 2,
        retry: 30
      })
      await waitReady(controller.url, ['with-dls', 'without-dls'])

      const streaming = producer.stream(RECORDS, 50, 100)
      flapped = (async () => {
        while (flapping) {
          for (const [mode, ms] of CYCLE) {
            if (!flapping) break
            await sink.setMode(mode)
            await sleep(ms)
          }
          cycles++
        }
        await sink.setMode('up')
      })()
      await streaming
      // Two whole cycles, with the sink seen answering 503 and resetting connections while records flowed. A reset
      // window that no delivery met (all of them backing off from the 503s, or the stream already delivered) proves
      // nothing, so records go on flowing until the sink has seen both.
      const regimeSeen = () => cycles >= 2 && (sink.answers['503'] ?? 0) > 0 && (sink.answers['reset'] ?? 0) > 0
      for (const until = Date.now() + 120_000; !regimeSeen() && Date.now() < until;) {
        await producer.stream(100, 50, 100)
      }
      await eventually(
        async () => (regimeSeen() ? true : undefined),
        120_000,
        'two flap cycles, the sink answering 503 and resetting connections'
      ).catch((error: unknown) => {
        throw new Error(`${(error as Error).message} (cycles ${cycles}, answers ${JSON.stringify(sink.answers)})`)
      })
      flapping = false
      await flapped

      const sources = [
        { name: 'with-dls', sink, deadLetter },
        { name: 'without-dls', sink }
      ]
      const figures = await settle('sink-flap', producer.produced, sources)
      // The sink counts a refusal when it answers; the dispatcher counts the drop once it has read that answer.
      const refusals = [...producer.produced].filter(refused).length
      const metricsUrl = dispatcher.metricsUrl!
      const droppedMetric = await eventually(
        async () => {
          const dropped = await metricSum(metricsUrl, 'shoal_source_events_dropped_total')
          return dropped >= refusals ? dropped : undefined
        },
        60_000,
        `the dispatcher counting ${refusals} drops`
      ).catch(() => metricSum(metricsUrl, 'shoal_source_events_dropped_total'))
      report(figures, {
        cycles,
        answers: Object.entries(sink.answers)
          .map(([k, v]) => `${k}:${v}`)
          .join(' ')
      })
      assert.equal(figures.produced, 2 * producer.produced.size)
      assert.equal(figures.lost, 0, `lost ${figures.lostIds.slice(0, 20).join(' ')}`)
      // Exactly the refused ids left the normal path: to the dead letter sink, or dropped by policy.
      assert.equal(figures.deadLettered, refusals)
      assert.equal(figures.dropped, refusals)
      assert.ok(droppedMetric >= refusals, `the dispatcher counted ${droppedMetric} drops, the sink saw ${refusals}`)
    } finally {
      flapping = false
      await flapped
      await producer.close()
      await controller?.stop()
      await dispatcher?.stop()
      await sink.close()
      await deadLetter.close()
    }
  })
})
