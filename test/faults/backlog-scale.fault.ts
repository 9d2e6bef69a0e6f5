// Drill: KafkaSources created over a backlog and scaled while they drain — 2 → 6 → 1 → 4 vreplicas on three
// dispatchers in three zones, more records produced after each step — one `ordered`, one `unordered`, on the same
// topic. Every step is a consumer-group rebalance over records waiting and records arriving; each moved partition
// is handed over (docs/kafka-source.md, "Rebalances: the hand-over"). Nothing may be lost; duplicates are counted.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { ensureTopics } from '../../src/kafka/index.ts'
import { scaleKafkaSource, startControllerProcess } from '../helpers/controllers.ts'
import type { ControllerProcess } from '../helpers/controllers.ts'
import { brokers, uniqueName } from '../helpers/kafka.ts'
import { eventually } from '../helpers/wait.ts'
import { startZonedDispatchers } from '../helpers/dispatchers.ts'
import type { DispatcherProcess } from '../helpers/dispatchers.ts'
import { CountingSink, IdProducer, LIVENESS, createSource, reportEach, settle, waitReady } from './harness.ts'

const PARTITIONS = 12
const BACKLOG = 3_000
const PER_STEP = 1_000
const STEPS = [6, 1, 4]
const SOURCES = ['unordered', 'ordered'] as const

describe('drill: sources created over a backlog and scaled while they drain', () => {
  it('loses nothing through 2 → 6 → 1 → 4, ordered and unordered', async () => {
    const prefix = uniqueName('drill-backlog')
    const topic = `${prefix}-topic`
    await ensureTopics({ brokers: brokers(), clientId: 'drill' }, [
      { name: topic, partitions: PARTITIONS, configs: {} }
    ])
    const sink = await new CountingSink().start()
    const producer = new IdProducer('backlog-scale', topic, PARTITIONS)
    let controller: ControllerProcess | undefined
    const dispatchers = new Map<string, DispatcherProcess>()
    try {
      // The backlog is there before the sources exist, in sends of 1,000 (batches of ~80 records a partition).
      await producer.produce(BACKLOG, 1_000)
      controller = await startControllerProcess(prefix, LIVENESS)
      await startZonedDispatchers(prefix, dispatchers, 3, 10, LIVENESS)
      for (const ordering of SOURCES) {
        await createSource(controller.url, { name: ordering, topic, sink: sink.url(ordering), consumers: 2, ordering })
      }
      await waitReady(controller.url, [...SOURCES])
      for (const consumers of STEPS) {
        // Each step lands while the sources are still draining what came before.
        await eventually(
          async () => (SOURCES.every(s => sink.ids(s).size >= producer.produced.size / 3) ? true : undefined),
          120_000,
          'the sources draining'
        )
        for (const name of SOURCES) await scaleKafkaSource(controller.url, name, consumers)
        await producer.produce(PER_STEP, 200)
      }
      const sources = SOURCES.map(name => ({ name, sink }))
      await settle('backlog-scale', producer.produced, sources)
      for (const figures of reportEach('backlog-scale', producer.produced, sources, { steps: '2 → 6 → 1 → 4' })) {
        assert.equal(figures.produced, BACKLOG + STEPS.length * PER_STEP)
        assert.equal(figures.lost, 0, `${figures.drill}: lost ${figures.lostIds.slice(0, 20).join(' ')}`)
      }
    } finally {
      await producer.close()
      await controller?.stop()
      await Promise.all([...dispatchers.values()].map(d => d.stop()))
      await sink.close()
    }
  })
})
