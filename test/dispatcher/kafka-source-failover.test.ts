import assert from 'node:assert/strict'
import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { describe, it } from 'node:test'
import { Producer } from '@platformatic/kafka'
import { ensureTopics } from '../../src/kafka/index.ts'
import { startControllerProcess } from '../helpers/controllers.ts'
import { http } from '../helpers/http.ts'
import { brokers, uniqueName } from '../helpers/kafka.ts'
import { eventually } from '../helpers/wait.ts'
import { startZonedDispatchers } from '../helpers/dispatchers.ts'
import type { DispatcherProcess } from '../helpers/dispatchers.ts'

const KS = '/apis/sources.knative.dev/v1beta1/namespaces/default/kafkasources'
const LIVENESS = ['--liveness-timeout', '3s']

describe('a dispatcher SIGKILLed mid-stream', () => {
  it('loses no record: every id produced reaches the sink, duplicates counted', async () => {
    const prefix = uniqueName('kill')
    const topic = `${prefix}-topic`
    await ensureTopics({ brokers: brokers(), clientId: 'kill' }, [{ name: topic, partitions: 12, configs: {} }])
    const seen = new Map<string, number>()
    const sink = createServer((req, res) => {
      req.resume()
      req.on('end', () => {
        const id = String(req.headers['ce-id'])
        seen.set(id, (seen.get(id) ?? 0) + 1)
        res.writeHead(202).end()
      })
    })
    sink.listen(0, '127.0.0.1')
    await once(sink, 'listening')
    const sinkUrl = `http://127.0.0.1:${(sink.address() as AddressInfo).port}/`
    const controller = await startControllerProcess(prefix, LIVENESS)
    const dispatchers = new Map<string, DispatcherProcess>()
    const producer = new Producer({ clientId: 'kill', bootstrapBrokers: brokers(), idempotent: true })
    try {
      await startZonedDispatchers(prefix, dispatchers, 2, 10, LIVENESS)
      await http(
        'POST',
        `${controller.url}${KS}`,
        `apiVersion: sources.knative.dev/v1beta1\nkind: KafkaSource\nmetadata: {name: stream}\nspec:\n  bootstrapServers: [${brokers().join(',')}]\n  topics: [${topic}]\n  consumers: 2\n  initialOffset: earliest\n  ordering: unordered\n  sink: {uri: "${sinkUrl}"}\n`
      )
      await eventually(
        async () => {
          const s = (await http('GET', `${controller.url}${KS}/stream`)).body
          return s.status.conditions.find((c: { type: string; status: string }) => c.type === 'Ready')?.status ===
            'True'
            ? true
            : undefined
        },
        60_000,
        'the source Ready'
      )

      const produced = new Set<string>()
      const produce = async (from: number, n: number) => {
        const messages = Array.from({ length: n }, (_, i) => ({
          topic,
          partition: (from + i) % 12,
          value: Buffer.from(`r${from + i}`)
        }))
        const result = await producer.send({ acks: -1, messages })
        const next = new Map((result.offsets ?? []).map(o => [o.partition, o.offset]))
        for (const m of messages) {
          const offset = next.get(m.partition)!
          next.set(m.partition, offset + 1n)
          produced.add(`partition:${m.partition}/offset:${offset}`)
        }
      }
      let n = 0
      for (; n < 1_500; n += 100) await produce(n, 100)
      await eventually(async () => (seen.size >= 500 ? true : undefined), 60_000, 'the stream flowing')
      await dispatchers.get('dispatcher-0')!.stop('SIGKILL')
      dispatchers.delete('dispatcher-0')
      for (; n < 3_000; n += 100) await produce(n, 100)

      await eventually(
        async () => ([...produced].every(id => seen.has(id)) ? true : undefined),
        120_000,
        'every record at the sink'
      )
      const lost = [...produced].filter(id => !seen.has(id)).length
      const duplicates = [...seen.values()].reduce((d, count) => d + count - 1, 0)
      console.log(
        `# produced ${produced.size}, delivered ${seen.size} unique, duplicates ${duplicates} (${((100 * duplicates) / produced.size).toFixed(2)} %), lost ${lost}`
      )
      assert.equal(lost, 0)
      // The killed dispatcher's vreplica moves to the survivor (the group may have handed its partitions over
      // and drained the stream before the controller declared the dispatcher dead, so wait for it).
      const podNames = async () =>
        (await http('GET', `${controller.url}${KS}/stream`)).body.status.placements.map(
          (p: { podName: string }) => p.podName
        ) as string[]
      await eventually(
        async () => ((await podNames()).every(pod => pod === 'dispatcher-1') ? true : undefined),
        60_000,
        'the vreplica moved to dispatcher-1'
      )
      assert.deepEqual(await podNames(), ['dispatcher-1'])
    } finally {
      await producer.close()
      await controller.stop()
      await Promise.all([...dispatchers.values()].map(d => d.stop()))
      sink.close()
    }
  })
})
