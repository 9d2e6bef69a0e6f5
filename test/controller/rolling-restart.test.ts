import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { ensureTopics } from '../../src/kafka/index.ts'
import { KS, RecordingProducer, condition, countingSink, kafkaSource, sourceAt } from '../autoscale/harness.ts'
import { replicas, startControllerProcess } from '../helpers/controllers.ts'
import type { ControllerProcess } from '../helpers/controllers.ts'
import { http } from '../helpers/http.ts'
import { brokers, uniqueName } from '../helpers/kafka.ts'
import { eventually } from '../helpers/wait.ts'
import { startDispatcherProcess } from '../helpers/dispatchers.ts'
import type { DispatcherProcess } from '../helpers/dispatchers.ts'

const LIVENESS = ['--liveness-timeout', '3s']
const PARTITIONS = 4

// DESIGN §4 / issue 5 item 2: every controller SIGTERMed and started again, one after another, while a source
// delivers. The dispatchers keep their contracts meanwhile, so delivery goes on: records produced while a controller
// is down, and after it is back, reach the sink before the next restart; at the end none is missing.
describe('a rolling restart of every controller', () => {
  it('does not interrupt delivery and loses no record', async () => {
    const prefix = uniqueName('rolling')
    const topic = `${prefix}-topic`
    await ensureTopics({ brokers: brokers(), clientId: 'rolling' }, [
      { name: topic, partitions: PARTITIONS, configs: {} }
    ])
    const sink = await countingSink()
    const producer = new RecordingProducer()
    const controllers: ControllerProcess[] = []
    const dispatchers: DispatcherProcess[] = []
    let trickle: NodeJS.Timeout | undefined
    let producing: Promise<unknown> = Promise.resolve()
    const delivered = (ids: readonly string[]) => async () => (ids.every(id => sink.seen.has(id)) ? true : undefined)
    try {
      controllers.push(...(await Promise.all([0, 1, 2].map(() => startControllerProcess(prefix, LIVENESS)))))
      await eventually(
        async () => ((await replicas(controllers[0]!.url)).length === 3 ? true : undefined),
        60_000,
        'three controllers in the group'
      )
      for (const [i, zone] of ['a', 'b'].entries()) {
        dispatchers.push(await startDispatcherProcess(prefix, `dispatcher-${i}`, zone, `${zone}-1`, 4, LIVENESS))
      }
      const created = await http(
        'POST',
        `${controllers[0]!.url}${KS}`,
        kafkaSource('steady', topic, sink.url, { consumers: 2, initialOffset: 'earliest' })
      )
      assert.equal(created.status, 201, JSON.stringify(created.body))
      await eventually(
        async () => (condition(await sourceAt(controllers[0]!.url, 'steady'), 'Ready') === 'True' ? true : undefined),
        90_000,
        'the source Ready'
      )
      await eventually(delivered(await producer.produce(topic, PARTITIONS, 40)), 60_000, 'the stream flowing')
      // A trickle all along, so records are produced during every stop and start too.
      trickle = setInterval(() => {
        producing = producing.then(() => producer.produce(topic, PARTITIONS, 4)).catch(() => undefined)
      }, 250)

      for (let i = 0; i < controllers.length; i++) {
        const old = controllers[i]!
        const others = controllers.filter(c => c !== old)
        await old.stop('SIGTERM')
        // While it is down (it may have been the leader), records still reach the sink.
        await eventually(delivered(await producer.produce(topic, PARTITIONS, 20)), 60_000, `delivery with #${i} down`)
        const fresh = await startControllerProcess(prefix, LIVENESS)
        controllers[i] = fresh
        await eventually(
          async () => {
            const current = await replicas(others[0]!.url)
            return current.length === 3 && current.some(r => r.url === fresh.url) && current.some(r => r.leader)
              ? true
              : undefined
          },
          60_000,
          `controller #${i} back in the group, with a leader`
        )
        // And after it is back, before the next restart.
        await eventually(delivered(await producer.produce(topic, PARTITIONS, 20)), 60_000, `delivery after #${i}`)
      }

      clearInterval(trickle)
      trickle = undefined
      await producing
      const all = [...producer.produced]
      await eventually(delivered(all), 60_000, 'every record at the sink')
      const lost = all.filter(id => !sink.seen.has(id)).length
      const duplicates = [...sink.seen.values()].reduce((d, n) => d + n - 1, 0)
      console.log(`# ${all.length} records produced, lost ${lost}, duplicates ${duplicates}`)
      assert.equal(lost, 0)
      // Every replica is a new process now; the source is still Ready and placed.
      const after = await sourceAt(controllers[2]!.url, 'steady')
      assert.equal(condition(after, 'Ready'), 'True')
      assert.equal(after.status.consumers, 2)
    } finally {
      clearInterval(trickle)
      await producing
      await producer.close()
      await Promise.all(controllers.map(c => c.stop()))
      await Promise.all(dispatchers.map(d => d.stop()))
      await sink.close()
    }
  })
})
