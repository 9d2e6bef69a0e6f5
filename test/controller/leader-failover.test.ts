import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { ensureTopics } from '../../src/kafka/index.ts'
import { replicas, startControllerProcess } from '../helpers/controllers.ts'
import type { ControllerProcess } from '../helpers/controllers.ts'
import { http } from '../helpers/http.ts'
import { brokers, uniqueName } from '../helpers/kafka.ts'
import { eventually } from '../helpers/wait.ts'
import { startDispatcherProcess } from '../helpers/dispatchers.ts'
import type { DispatcherProcess } from '../helpers/dispatchers.ts'
import { KS, RecordingProducer, countingSink, cli, condition, kafkaSource, sourceAt } from '../autoscale/harness.ts'

const LIVENESS = ['--liveness-timeout', '3s']
const SOURCES = 50
const PARTITIONS = 4
const AUTOSCALED = new Set([0, 1])

// As issue 5 says: 3 controllers, 4 dispatchers (zones a, b, c, a), 50 active sources on one topic (each its own
// consumer group, 75 vreplicas in all; two of them autoscaled), 600 records each.
describe('the scheduler leader SIGKILLed mid-stream', () => {
  // Fifty groups joining and rebalancing through a failover: more than the suite's default 120 s per test.
  it('is replaced, every source is Ready again, and no record is lost', { timeout: 300_000 }, async () => {
    const prefix = uniqueName('leader-kill')
    const topic = `${prefix}-topic`
    await ensureTopics({ brokers: brokers(), clientId: 'leader-kill' }, [
      { name: topic, partitions: PARTITIONS, configs: {} }
    ])
    // One sink; each source posts to its own path, so a delivery is (source, ce-id).
    const sink = await countingSink({ byPath: true })
    const seen = sink.seen
    const sinkUrl = sink.url.slice(0, -1)
    const producer = new RecordingProducer()
    const controllers: ControllerProcess[] = []
    const dispatchers: DispatcherProcess[] = []
    try {
      controllers.push(...(await Promise.all([0, 1, 2].map(() => startControllerProcess(prefix, LIVENESS)))))
      await eventually(
        async () => ((await replicas(controllers[0]!.url)).length === 3 ? true : undefined),
        60_000,
        'three controllers in the group'
      )
      for (const [i, zone] of ['a', 'b', 'c', 'a'].entries()) {
        dispatchers.push(await startDispatcherProcess(prefix, `dispatcher-${i}`, zone, `${zone}-${i}`, 20, LIVENESS))
      }
      const names = Array.from({ length: SOURCES }, (_, i) => `s${i}`)
      for (const [i, name] of names.entries()) {
        const manifest = kafkaSource(name, topic, `${sinkUrl}/${name}`, {
          consumers: 1 + (i % 2),
          initialOffset: 'earliest',
          ...(AUTOSCALED.has(i)
            ? {
                annotations: {
                  'autoscaling.eventing.knative.dev/class': 'keda.autoscaling.knative.dev',
                  'autoscaling.eventing.knative.dev/min-scale': '1',
                  'autoscaling.eventing.knative.dev/lag-threshold': '50'
                }
              }
            : {})
        })
        const created = await http('POST', `${controllers[i % 3]!.url}${KS}`, manifest)
        assert.equal(created.status, 201, JSON.stringify(created.body))
      }
      const allReady = async (url: string) => {
        for (const name of names) if (condition(await sourceAt(url, name), 'Ready') !== 'True') return undefined
        return true
      }
      await eventually(() => allReady(controllers[0]!.url), 180_000, 'every source Ready')

      await producer.produce(topic, PARTITIONS, 300)
      await eventually(async () => (seen.size >= 600 ? true : undefined), 90_000, 'the stream flowing')

      const leader = (await replicas(controllers[0]!.url)).find(r => r.leader)
      assert.ok(leader, 'a leader before the kill')
      const victim = controllers.find(c => c.url === leader.url)!
      await victim.stop('SIGKILL')
      const survivors = controllers.filter(c => c !== victim)
      await producer.produce(topic, PARTITIONS, 300)

      // A new leader among the survivors, shown by `shoal get controllers`.
      const next = await eventually(
        async () => {
          const current = await replicas(survivors[0]!.url)
          const found = current.find(r => r.leader)
          return current.length === 2 && found && found.replicaId !== leader.replicaId ? found : undefined
        },
        60_000,
        'a new leader'
      )
      // Each replica reads the others' records from the log: the other survivor may not show the new leader yet.
      const leaderRow = new RegExp(`${next.replicaId}\\s.*\\syes\\s`)
      const table = await eventually(
        async () => {
          const answer = await cli(survivors[1]!.url, 'get', 'controllers')
          return answer.code === 0 && leaderRow.test(answer.stdout) ? answer : undefined
        },
        60_000,
        `${next.replicaId} shown as the leader by the other survivor`
      )
      assert.equal(table.code, 0, table.stderr)
      assert.match(table.stdout, leaderRow)

      // Nothing lost: every record produced, before and during the failover, reached every source's sink.
      const expected = names.flatMap(name => [...producer.produced].map(id => `/${name}|${id}`))
      await eventually(
        async () => (expected.every(id => seen.has(id)) ? true : undefined),
        120_000,
        'every record at every source’s sink'
      ).catch(async (error: unknown) => {
        // What a failure needs to be understood: which sources miss how many, their status, the dispatchers' logs.
        const missing = new Map<string, number>()
        for (const id of expected) {
          if (seen.has(id)) continue
          const name = id.slice(1, id.indexOf('|'))
          missing.set(name, (missing.get(name) ?? 0) + 1)
        }
        const statuses = await Promise.all(
          [...missing.keys()].map(async name => ({ name, status: (await sourceAt(survivors[0]!.url, name)).status }))
        )
        const logs = dispatchers.map(d => `--- ${d.id}\n${d.stderr.slice(-20_000)}`).join('\n')
        throw new Error(
          `${String(error)}\nmissing per source: ${JSON.stringify([...missing])}\n${JSON.stringify(statuses, null, 1)}\n${logs}`
        )
      })
      const lost = expected.filter(id => !seen.has(id)).length
      const duplicates = [...seen.values()].reduce((d, n) => d + n - 1, 0)
      console.log(`# ${expected.length} deliveries expected, lost ${lost}, duplicates ${duplicates}`)
      assert.equal(lost, 0)
      await eventually(() => allReady(survivors[0]!.url), 60_000, 'every source Ready after the failover')

      // The new leader schedules: a source created now is placed and delivers.
      const created = await http(
        'POST',
        `${survivors[0]!.url}${KS}`,
        kafkaSource('late', topic, `${sinkUrl}/late`, { initialOffset: 'earliest' })
      )
      assert.equal(created.status, 201, JSON.stringify(created.body))
      await eventually(
        async () => ([...producer.produced].every(id => seen.has(`/late|${id}`)) ? true : undefined),
        60_000,
        'the new source delivering'
      )
    } finally {
      await producer.close()
      await Promise.all(controllers.map(c => c.stop()))
      await Promise.all(dispatchers.map(d => d.stop()))
      await sink.close()
    }
  })
})
