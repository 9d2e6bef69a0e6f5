// Drill: SIGKILL a dispatcher mid-stream. Its vreplicas move to the survivors; what it had fetched but not
// committed is delivered again by the next owner (duplicates), nothing is lost. Three PingSources fire every
// second beside the KafkaSources; the victim is the dispatcher that runs them (it holds one of the stream's
// vreplicas too), so their schedules fail over with it: no second may be missing, and the seconds fired twice
// are printed.
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
  reportEach,
  reportPings,
  settle,
  waitReady
} from './harness.ts'

const PARTITIONS = 12
const RECORDS = 3_000

describe('drill: a dispatcher SIGKILLed mid-stream', () => {
  it('moves its vreplicas to the survivors and loses nothing', async () => {
    const prefix = uniqueName('drill-dispatcher')
    const topic = `${prefix}-topic`
    await ensureTopics({ brokers: brokers(), clientId: 'drill' }, [
      { name: topic, partitions: PARTITIONS, configs: {} }
    ])
    const sink = await new CountingSink().start()
    const pingSink = await new TickSink().start()
    const producer = new IdProducer('dispatcher-kill', topic, PARTITIONS)
    let controller: ControllerProcess | undefined
    const dispatchers: DispatcherProcess[] = []
    try {
      controller = await startControllerProcess(prefix, LIVENESS)
      for (const [i, zone] of ['a', 'b', 'c'].entries()) {
        dispatchers.push(await startDispatcherProcess(prefix, `dispatcher-${i}`, zone, `${zone}-1`, 10, LIVENESS))
      }
      await createSource(controller.url, { name: 'stream', topic, sink: sink.url('stream'), consumers: 3 })
      // Knative's default ordering beside it, on the same topic (a group of its own).
      await createSource(controller.url, {
        name: 'ordered',
        topic,
        sink: sink.url('ordered'),
        consumers: 3,
        ordering: 'ordered'
      })
      await createEverySecondSources(controller.url, PINGS, pingSink)
      await waitReady(controller.url, ['stream', 'ordered'])
      const pingsReady = await readyTimes(controller.url, PINGS)

      const streaming = producer.stream(RECORDS, 100, 100)
      await eventually(async () => (sink.ids('stream').size >= 600 ? true : undefined), 120_000, 'the stream flowing')
      const placements = (await http('GET', `${controller.url}${KS}/stream`)).body.status.placements as Array<{
        podName: string
      }>
      // The PingSources' dispatcher when it holds a vreplica of the stream (it does when the three are spread).
      const pingsOn = await pingPlacements(controller.url)
      const pingHost = pingsOn.get(PINGS[0])
      const victimId = placements.some(p => p.podName === pingHost) ? pingHost : placements[0]?.podName
      const victim = dispatchers.find(d => d.id === victimId)
      assert.ok(victim, `a dispatcher with a placement (${JSON.stringify(placements)})`)
      const pingsOnVictim = PINGS.filter(n => pingsOn.get(n) === victim.id).length
      assert.ok(pingsOnVictim > 0, `a PingSource on ${victim.id} (${JSON.stringify([...pingsOn])})`)
      const killedAt = Date.now()
      await victim.stop('SIGKILL')
      await streaming

      // The killed dispatcher's vreplica is placed on a survivor.
      await eventually(
        async () => {
          const now = (await http('GET', `${controller!.url}${KS}/stream`)).body.status.placements as Array<{
            podName: string
            vreplicas: number
          }>
          const placed = now.reduce((n, p) => n + p.vreplicas, 0)
          return placed === 3 && now.every(p => p.podName !== victim.id) ? true : undefined
        },
        120_000,
        `the vreplicas of ${victim.id} placed on the survivors`
      )
      const sources = [
        { name: 'stream', sink },
        { name: 'ordered', sink }
      ]
      await settle('dispatcher-kill', producer.produced, sources)
      const pingsStop = Date.now()
      const kafka = reportEach('dispatcher-kill', producer.produced, sources, { killed: victim.id })
      const pings = await reportPings(
        'dispatcher-kill',
        pingSink,
        pingsReady,
        pingsStop,
        { killed: victim.id, pingsOnKilled: pingsOnVictim },
        { SIGKILL: killedAt }
      )
      for (const figures of kafka) {
        assert.equal(figures.produced, RECORDS)
        assert.equal(figures.lost, 0, `${figures.drill}: lost ${figures.lostIds.slice(0, 20).join(' ')}`)
      }
      assertPings('dispatcher-kill', pings)
    } finally {
      await producer.close()
      await controller?.stop()
      await Promise.all(dispatchers.map(d => d.stop()))
      await sink.close()
      await pingSink.close()
    }
  })
})
