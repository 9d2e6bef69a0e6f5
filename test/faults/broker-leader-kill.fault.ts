// Drill: SIGKILL the JVM of the broker that leads a busy partition, mid-stream, as the Kafka-on-EKS drill kills
// a broker pod. Replication 3 and min.insync.replicas 2 keep the topic writable with acks=all; another replica
// takes the partition's leadership; producers, Shoal's store and the KafkaSource's consumers follow it. The
// broker comes back afterwards and catches up, so the next drill starts with three in-sync replicas.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { ensureTopics } from '../../src/kafka/index.ts'
import { storeNames } from '../../src/store/index.ts'
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
  brokerList,
  createSource,
  durability,
  killBroker,
  partitionStates,
  reportEach,
  settle,
  startBroker,
  waitFullIsr,
  waitReady
} from './harness.ts'

const PARTITIONS = 6
const RECORDS = 3_000
const BUSY = 0

describe('drill: the leader broker of a busy partition SIGKILLed mid-stream', () => {
  it('fails the partition over to an in-sync replica and loses nothing', async () => {
    const prefix = uniqueName('drill-broker')
    const topic = `${prefix}-topic`
    await ensureTopics({ brokers: brokers(), clientId: 'drill' }, [
      { name: topic, partitions: PARTITIONS, configs: {} }
    ])
    const sink = await new CountingSink().start()
    const producer = new IdProducer('broker-leader-kill', topic, PARTITIONS)
    let controller: ControllerProcess | undefined
    const dispatchers: DispatcherProcess[] = []
    let killed: number | undefined
    try {
      controller = await startControllerProcess(prefix, LIVENESS)
      for (const [i, zone] of ['a', 'b'].entries()) {
        dispatchers.push(await startDispatcherProcess(prefix, `dispatcher-${i}`, zone, `${zone}-1`, 10, LIVENESS))
      }
      await createSource(controller.url, { name: 'stream', topic, sink: sink.url('stream'), consumers: 2 })
      // Knative's default ordering beside it, on the same topic (a group of its own).
      await createSource(controller.url, {
        name: 'ordered',
        topic,
        sink: sink.url('ordered'),
        consumers: 2,
        ordering: 'ordered'
      })
      await waitReady(controller.url, ['stream', 'ordered'])
      // Every topic the drill writes, Shoal's own included, survives one broker: 3 replicas, 2 must acknowledge.
      const store = storeNames(prefix)
      const topics = [topic, store.resourcesTopic, store.statusTopic, store.contractsTopic, store.membersTopic]
      const replication = await durability(topics)
      for (const name of topics) assert.equal(replication[name], 'replicas 3, min.insync.replicas 2', name)

      const streaming = producer.stream(RECORDS, 50, 100)
      await eventually(async () => (sink.ids('stream').size >= 500 ? true : undefined), 120_000, 'the stream flowing')
      const leader = (await partitionStates(topic))[BUSY]!.leader
      assert.ok(leader > 0, 'the busy partition has a leader')
      const pid = (await brokerList()).find(b => b.nodeId === leader)?.pid
      killed = leader
      await killBroker(leader)
      // Another in-sync replica leads the partition; the killed broker drops out of every ISR.
      const after = await eventually(
        async () => {
          const state = (await partitionStates(topic))[BUSY]
          return state && state.leader > 0 && state.leader !== leader && !state.isr.includes(leader) ? state : undefined
        },
        120_000,
        `a new leader for partition ${BUSY}`
      )
      await streaming

      const sources = [
        { name: 'stream', sink },
        { name: 'ordered', sink }
      ]
      await settle('broker-leader-kill', producer.produced, sources)
      const notes = {
        killed: `broker ${leader} (pid ${pid})`,
        newLeader: after.leader,
        failedSends: producer.failedSends
      }
      for (const figures of reportEach('broker-leader-kill', producer.produced, sources, notes)) {
        assert.equal(figures.produced, RECORDS)
        assert.equal(figures.lost, 0, `${figures.drill}: lost ${figures.lostIds.slice(0, 20).join(' ')}`)
      }
    } finally {
      await producer.close()
      await controller?.stop()
      await Promise.all(dispatchers.map(d => d.stop()))
      await sink.close()
      if (killed !== undefined) {
        await startBroker(killed)
        const store = storeNames(prefix)
        await waitFullIsr([topic, store.contractsTopic, store.membersTopic, store.resourcesTopic])
      }
    }
  })
})
