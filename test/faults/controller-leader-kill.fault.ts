// Drill: SIGKILL the leader controller (the owner of bucket 0, which runs the scheduler) mid-stream. The data
// plane keeps delivering on its contracts meanwhile; a survivor takes bucket 0 and schedules again: a source
// created through a survivor right after the kill is placed and delivers every record as well. Three PingSources
// fire every second beside them, created before the kill: the dispatchers go on firing them on their contracts
// through the failover, so no second may be missing, and the seconds fired twice are printed.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { ensureTopics } from '../../src/kafka/index.ts'
import { replicas, startControllerProcess } from '../helpers/controllers.ts'
import type { ControllerProcess } from '../helpers/controllers.ts'
import { brokers, uniqueName } from '../helpers/kafka.ts'
import { eventually } from '../helpers/wait.ts'
import { startDispatcherProcess } from '../helpers/dispatchers.ts'
import type { DispatcherProcess } from '../helpers/dispatchers.ts'
import { TickSink, createEverySecondSources, readyTimes } from '../helpers/ticks.ts'
import {
  CountingSink,
  IdProducer,
  LIVENESS,
  PINGS,
  assertPings,
  createSource,
  createSourceDuringFailover,
  reportEach,
  reportPings,
  settle,
  waitReady
} from './harness.ts'

const PARTITIONS = 6
const RECORDS = 2_000

describe('drill: the leader controller SIGKILLed mid-stream', () => {
  it('is replaced by a survivor that schedules again, and nothing is lost', async () => {
    const prefix = uniqueName('drill-controller')
    const topic = `${prefix}-topic`
    await ensureTopics({ brokers: brokers(), clientId: 'drill' }, [
      { name: topic, partitions: PARTITIONS, configs: {} }
    ])
    const sink = await new CountingSink().start()
    const pingSink = await new TickSink().start()
    const producer = new IdProducer('controller-leader-kill', topic, PARTITIONS)
    const controllers: ControllerProcess[] = []
    const dispatchers: DispatcherProcess[] = []
    try {
      controllers.push(...(await Promise.all([0, 1, 2].map(() => startControllerProcess(prefix, LIVENESS)))))
      await eventually(
        async () => ((await replicas(controllers[0]!.url)).length === 3 ? true : undefined),
        120_000,
        'three controllers in the group'
      )
      for (const [i, zone] of ['a', 'b'].entries()) {
        dispatchers.push(await startDispatcherProcess(prefix, `dispatcher-${i}`, zone, `${zone}-1`, 10, LIVENESS))
      }
      await createSource(controllers[0]!.url, { name: 'before', topic, sink: sink.url('before'), consumers: 2 })
      // Knative's default ordering beside it, on the same topic (a group of its own).
      await createSource(controllers[0]!.url, {
        name: 'ordered',
        topic,
        sink: sink.url('ordered'),
        consumers: 2,
        ordering: 'ordered'
      })
      await createEverySecondSources(controllers[0]!.url, PINGS, pingSink)
      await waitReady(controllers[0]!.url, ['before', 'ordered'])
      const pingsReady = await readyTimes(controllers[0]!.url, PINGS)

      const streaming = producer.stream(RECORDS, 50, 100)
      await eventually(async () => (sink.ids('before').size >= 400 ? true : undefined), 120_000, 'the stream flowing')
      const leader = (await replicas(controllers[0]!.url)).find(r => r.leader)
      assert.ok(leader, 'a leader before the kill')
      const victim = controllers.find(c => c.url === leader.url)
      assert.ok(victim, `the leader ${leader.url} is one of the drill's controllers`)
      const killedAt = Date.now()
      await victim.stop('SIGKILL')
      const survivors = controllers.filter(c => c !== victim)
      // Created while the group may still be leaderless: the new leader must place it.
      await createSourceDuringFailover(survivors[0]!.url, {
        name: 'after',
        topic,
        sink: sink.url('after'),
        consumers: 2
      })

      const next = await eventually(
        async () => {
          const current = await replicas(survivors[1]!.url)
          const found = current.find(r => r.leader)
          return current.length === 2 && found && found.replicaId !== leader.replicaId ? found : undefined
        },
        120_000,
        'a new leader among the survivors'
      )
      await streaming
      await waitReady(survivors[1]!.url, ['before', 'ordered', 'after'])

      const sources = [
        { name: 'before', sink },
        { name: 'ordered', sink },
        { name: 'after', sink }
      ]
      await settle('controller-leader-kill', producer.produced, sources)
      const pingsStop = Date.now()
      const notes = { killed: leader.replicaId, newLeader: next.replicaId }
      const kafka = reportEach('controller-leader-kill', producer.produced, sources, notes)
      const pings = await reportPings('controller-leader-kill', pingSink, pingsReady, pingsStop, notes, {
        SIGKILL: killedAt
      })
      for (const figures of kafka) {
        assert.equal(figures.produced, RECORDS)
        assert.equal(figures.lost, 0, `${figures.drill}: lost ${figures.lostIds.slice(0, 20).join(' ')}`)
      }
      assertPings('controller-leader-kill', pings)
    } finally {
      await producer.close()
      await Promise.all(controllers.map(c => c.stop()))
      await Promise.all(dispatchers.map(d => d.stop()))
      await sink.close()
      await pingSink.close()
    }
  })
})
