// Drill: a dispatcher cut off from Kafka, and back. Both dispatchers and the KafkaSource reach the brokers only
// through the proxy of test/faults/setup.ts (the brokers' PROXIED listener advertises it), which black-holes
// every connection of the victim's Kafka clients (client ids `shoal-<id>…`) while the other's flow on. The victim
// is the dispatcher that runs the drill's three PingSources (every second; each dispatcher holds a vreplica of
// each KafkaSource as well). It must fence itself (its heartbeats go unacknowledged) and stop delivering; the
// controller declares it dead; when the link is back it unfences, is given work again (each dispatcher has two
// slots and the sources want four) and delivers. Nothing is lost: no record, no second of a PingSource.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { ensureTopics } from '../../src/kafka/index.ts'
import { startControllerProcess } from '../helpers/controllers.ts'
import type { ControllerProcess } from '../helpers/controllers.ts'
import { http } from '../helpers/http.ts'
import { brokers, uniqueName } from '../helpers/kafka.ts'
import { eventually } from '../helpers/wait.ts'
import { startDispatcherProcess } from '../helpers/dispatchers.ts'
import type { DispatcherProcess } from '../helpers/dispatchers.ts'
import { TickSink, createEverySecondSources, pingPlacements, readyTimes } from '../helpers/ticks.ts'
import {
  CountingSink,
  IdProducer,
  KS,
  LIVENESS,
  PINGS,
  assertPings,
  createSource,
  cutClient,
  metricSum,
  proxiedServers,
  reportEach,
  reportPings,
  restoreClients,
  settle,
  waitReady
} from './harness.ts'
import type { ProxyStats } from './kafka-proxy.ts'

const PARTITIONS = 6
const DISPATCHERS = '/apis/shoal.dev/v1alpha1/dispatchers'
const DELIVERED = 'shoal_source_events_delivered_total'
const KAFKA_SOURCES = { kind: 'KafkaSource' }

describe('drill: a dispatcher cut off from Kafka and back', () => {
  it('fences itself (stops delivering), resumes when the link is back, and nothing is lost', async () => {
    const prefix = uniqueName('drill-cut')
    const topic = `${prefix}-topic`
    await ensureTopics({ brokers: brokers(), clientId: 'drill' }, [
      { name: topic, partitions: PARTITIONS, configs: {} }
    ])
    const sink = await new CountingSink().start()
    const pingSink = await new TickSink().start()
    const producer = new IdProducer('dispatcher-cut-off', topic, PARTITIONS)
    let controller: ControllerProcess | undefined
    const dispatchers: DispatcherProcess[] = []
    let cut: ProxyStats | undefined
    try {
      controller = await startControllerProcess(prefix, LIVENESS)
      for (const [i, zone] of ['a', 'b'].entries()) {
        dispatchers.push(
          await startDispatcherProcess(
            prefix,
            `dispatcher-${i}`,
            zone,
            `${zone}-1`,
            2,
            [...LIVENESS, '--metrics-port', '0'],
            { kafka: proxiedServers() }
          )
        )
      }
      await createSource(controller.url, {
        name: 'stream',
        topic,
        bootstrap: proxiedServers(),
        sink: sink.url('stream'),
        consumers: 2
      })
      // Knative's default ordering beside it, on the same topic (a group of its own).
      await createSource(controller.url, {
        name: 'ordered',
        topic,
        bootstrap: proxiedServers(),
        sink: sink.url('ordered'),
        consumers: 2,
        ordering: 'ordered'
      })
      await createEverySecondSources(controller.url, PINGS, pingSink)
      await waitReady(controller.url, ['stream', 'ordered'])
      const pingsReady = await readyTimes(controller.url, PINGS)
      const pingsOn = await pingPlacements(controller.url)
      const victim = dispatchers.find(d => d.id === pingsOn.get(PINGS[0])) ?? dispatchers[1]!
      const victimId = victim.id
      const pingsOnVictim = PINGS.filter(n => pingsOn.get(n) === victimId).length
      assert.ok(pingsOnVictim > 0, `a PingSource on ${victimId} (${JSON.stringify([...pingsOn])})`)
      const metrics = victim.metricsUrl!
      const state = async (): Promise<string | undefined> =>
        (await http('GET', `${controller!.url}${DISPATCHERS}/${victimId}`)).body?.status?.state

      await producer.stream(600, 50, 100)
      await eventually(
        async () => ((await metricSum(metrics, DELIVERED, KAFKA_SOURCES)) > 0 ? true : undefined),
        120_000,
        `${victimId} delivering`
      )

      const marks: Record<string, number> = { cut: Date.now() }
      cut = await cutClient(`shoal-${victimId}`)
      // Fenced, and nothing of its own on the wire any more: from here on it must not deliver.
      const atFence = await eventually(
        async () =>
          (await metricSum(metrics, 'shoal_dispatcher_fenced')) === 1 &&
          (await metricSum(metrics, 'shoal_source_in_flight')) === 0
            ? metricSum(metrics, DELIVERED)
            : undefined,
        120_000,
        `${victimId} fenced`
      )
      await producer.stream(600, 50, 100)
      await eventually(
        async () => ((await state()) === 'Dead' ? true : undefined),
        120_000,
        `${victimId} declared dead`
      )
      marks['dead'] = Date.now()
      const whileCut = await metricSum(metrics, DELIVERED)
      assert.equal(whileCut, atFence, `${victimId} delivered while fenced`)
      assert.equal(await metricSum(metrics, 'shoal_dispatcher_fenced'), 1)

      marks['restore'] = Date.now()
      const restored = await restoreClients()
      await eventually(
        async () => ((await metricSum(metrics, 'shoal_dispatcher_fenced')) === 0 ? true : undefined),
        120_000,
        `${victimId} unfenced`
      )
      await eventually(async () => ((await state()) === 'Ready' ? true : undefined), 120_000, `${victimId} Ready again`)
      // Given work again, and delivering it: its KafkaSources' counter (not its PingSources', should they come
      // back) grows between two looks while records keep coming.
      const more = producer.stream(900, 50, 100)
      let last = await metricSum(metrics, DELIVERED, KAFKA_SOURCES)
      await eventually(
        async () => {
          const placements = (await http('GET', `${controller!.url}${KS}/stream`)).body.status.placements as Array<{
            podName: string
          }>
          const now = await metricSum(metrics, DELIVERED, KAFKA_SOURCES)
          const grew = now > last
          last = now
          return grew && placements.some(p => p.podName === victimId) ? true : undefined
        },
        120_000,
        `${victimId} delivering again`
      )
      await more

      const sources = [
        { name: 'stream', sink },
        { name: 'ordered', sink }
      ]
      await settle('dispatcher-cut-off', producer.produced, sources)
      const pingsStop = Date.now()
      const notes = { victim: victimId, heldConnections: restored.everHeld, deliveredByVictimBeforeCut: atFence }
      const kafka = reportEach('dispatcher-cut-off', producer.produced, sources, notes)
      const pings = await reportPings(
        'dispatcher-cut-off',
        pingSink,
        pingsReady,
        pingsStop,
        { victim: victimId, pingsOnVictim },
        marks
      )
      for (const figures of kafka) {
        assert.equal(figures.produced, 2_100)
        assert.equal(figures.lost, 0, `${figures.drill}: lost ${figures.lostIds.slice(0, 20).join(' ')}`)
      }
      assertPings('dispatcher-cut-off', pings)
      assert.ok(restored.everHeld > 0, `the cut held ${victimId}'s connections: ${JSON.stringify(cut)}`)
    } finally {
      if (cut) await restoreClients()
      await producer.close()
      await controller?.stop()
      await Promise.all(dispatchers.map(d => d.stop()))
      await sink.close()
      await pingSink.close()
    }
  })
})
