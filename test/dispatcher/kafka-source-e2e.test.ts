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
import { startDispatcherProcess } from '../helpers/dispatchers.ts'
import type { DispatcherProcess } from '../helpers/dispatchers.ts'

const KS = '/apis/sources.knative.dev/v1beta1/namespaces/default/kafkasources'

describe('a KafkaSource end to end', () => {
  it('delivers every record of 12 partitions to a real HTTP sink, through 3 vreplicas on 2 dispatchers', async () => {
    const prefix = uniqueName('e2e')
    const topic = `${prefix}-topic`
    await ensureTopics({ brokers: brokers(), clientId: 'e2e' }, [{ name: topic, partitions: 12, configs: {} }])
    const received = new Map<string, { headers: Record<string, string | string[] | undefined>; body: Buffer }>()
    const sink = createServer((req, res) => {
      const chunks: Buffer[] = []
      req.on('data', c => chunks.push(c))
      req.on('end', () => {
        received.set(String(req.headers['ce-id']), { headers: req.headers, body: Buffer.concat(chunks) })
        res.writeHead(202).end()
      })
    })
    sink.listen(0, '127.0.0.1')
    await once(sink, 'listening')
    const sinkUrl = `http://127.0.0.1:${(sink.address() as AddressInfo).port}/`
    const controller = await startControllerProcess(prefix)
    const dispatchers: DispatcherProcess[] = []
    try {
      dispatchers.push(await startDispatcherProcess(prefix, 'dispatcher-0', 'a', 'a-1', 10))
      dispatchers.push(await startDispatcherProcess(prefix, 'dispatcher-1', 'b', 'b-1', 10))
      const created = await http(
        'POST',
        `${controller.url}${KS}`,
        `apiVersion: sources.knative.dev/v1beta1\nkind: KafkaSource\nmetadata: {name: orders}\nspec:\n  bootstrapServers: [${brokers().join(',')}]\n  topics: [${topic}]\n  consumers: 3\n  initialOffset: earliest\n  ordering: unordered\n  sink: {uri: "${sinkUrl}"}\n`
      )
      assert.equal(created.status, 201, JSON.stringify(created.body))
      await eventually(
        async () => {
          const s = (await http('GET', `${controller.url}${KS}/orders`)).body
          return s.status.conditions.find((c: { type: string; status: string }) => c.type === 'Ready')?.status ===
            'True'
            ? true
            : undefined
        },
        60_000,
        'the source Ready'
      )

      const producer = new Producer({ clientId: 'e2e', bootstrapBrokers: brokers(), idempotent: true })
      const count = 2_000
      const produced = new Map<string, Buffer>()
      for (let batch = 0; batch < count / 200; batch++) {
        const messages = Array.from({ length: 200 }, (_, i) => {
          const n = batch * 200 + i
          // Bytes that are not UTF-8, and an empty one, travel exactly as stored.
          const value = n % 500 === 0 ? Buffer.alloc(0) : Buffer.from([0xff, 0xfe, n & 0xff, (n >> 8) & 0xff])
          return {
            topic,
            partition: n % 12,
            key: Buffer.from(`k${n}`),
            value,
            headers: new Map([[Buffer.from('trace'), Buffer.from(`t${n}`)]])
          }
        })
        const result = await producer.send({ acks: -1, messages })
        const firstOffsets = new Map<number, bigint>()
        for (const o of result.offsets ?? []) firstOffsets.set(o.partition, o.offset)
        const next = new Map(firstOffsets)
        for (const m of messages) {
          const offset = next.get(m.partition)!
          next.set(m.partition, offset + 1n)
          produced.set(`partition:${m.partition}/offset:${offset}`, m.value)
        }
      }
      await producer.close()

      await eventually(
        async () => (received.size >= produced.size ? true : undefined),
        120_000,
        `all ${count} events at the sink`
      )
      for (const [id, value] of produced) {
        const event = received.get(id)
        assert.ok(event, `missing ${id}`)
        assert.deepEqual(event.body, value, `${id}: payload bytes`)
        const [partition, offset] = /partition:(\d+)\/offset:(\d+)/.exec(id)!.slice(1)
        assert.equal(event.headers['ce-type'], 'dev.knative.kafka.event')
        assert.equal(event.headers['ce-source'], `/apis/v1/namespaces/default/kafkasources/orders#${topic}`)
        assert.equal(event.headers['ce-subject'], `partition:${partition}#${offset}`)
        assert.equal(event.headers['ce-specversion'], '1.0')
        assert.match(String(event.headers['ce-key']), /^k\d+$/)
      }
      // Every vreplica ran: the group has 3 members across the two dispatchers.
      const placements = (await http('GET', `${controller.url}${KS}/orders`)).body.status.placements
      assert.equal(
        placements.reduce((n: number, p: { vreplicas: number }) => n + p.vreplicas, 0),
        3
      )
    } finally {
      await controller.stop()
      await Promise.all(dispatchers.map(d => d.stop()))
      sink.close()
    }
  })
})
