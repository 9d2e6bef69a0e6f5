// docs/delivery.md says "a source without the annotations has no status.flowControl at all". A
// dispatcher's gates are keyed by the source's namespace/name and sink origin and live until idle for 10 minutes
// (GATE_IDLE_MS), whatever happens to the source. Delete a gated source and create it again under the same name
// without the annotations: its runner delivers ungated (right), but the old gate is still in the deliverer, every
// heartbeat reports it, and the new source's status.flowControl shows a limit it does not have. A real controller,
// dispatcher, broker and sink.
import assert from 'node:assert/strict'
import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { test } from 'node:test'
import { Producer } from '@platformatic/kafka'
import { brokers, createTopic, uniqueName } from '../helpers/kafka.ts'
import { eventually } from '../helpers/wait.ts'
import { startOneDispatcher } from '../helpers/one-dispatcher.ts'
import type { FlowControlRow } from '../../src/api/index.ts'

test('a KafkaSource created again without the flow control annotations shows no flow control', async t => {
  const prefix = uniqueName('t-review-flow-recreate')
  const topic = uniqueName('review-flow-recreate')
  await createTopic(topic, { partitions: 2 })
  let answered = 0
  const sink = createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      answered++
      res.writeHead(202).end()
    })
  })
  sink.listen(0, '127.0.0.1')
  await once(sink, 'listening')
  const origin = `http://127.0.0.1:${(sink.address() as AddressInfo).port}`
  const stack = await startOneDispatcher(prefix)
  const { controller } = stack
  const producer = new Producer({ clientId: 'review', bootstrapBrokers: brokers(), idempotent: true })
  t.after(async () => {
    await producer.close()
    await stack.close()
    sink.closeAllConnections()
    sink.close()
  })
  let produced = 0
  const produce = async (n: number): Promise<void> => {
    await producer.send({
      acks: -1,
      messages: Array.from({ length: n }, () => {
        const i = produced++
        return { topic, value: Buffer.from(`r${i}`), partition: i % 2 }
      })
    })
  }
  const sourceUrl = `${controller.url}/apis/sources.knative.dev/v1beta1/namespaces/default/kafkasources`
  const manifest = (annotations: Record<string, string>, group: string): string =>
    JSON.stringify({
      apiVersion: 'sources.knative.dev/v1beta1',
      kind: 'KafkaSource',
      metadata: { name: 'gated', annotations },
      spec: {
        bootstrapServers: brokers(),
        topics: [topic],
        consumerGroup: group,
        consumers: 1,
        ordering: 'unordered',
        initialOffset: 'earliest',
        sink: { uri: `${origin}/` }
      }
    })
  const flowControl = async (): Promise<FlowControlRow[] | undefined> => {
    const answer = await fetch(`${sourceUrl}/gated`)
    if (answer.status !== 200) return undefined
    const body = (await answer.json()) as { status?: { flowControl?: FlowControlRow[] } }
    return body.status?.flowControl
  }
  const create = async (annotations: Record<string, string>, group: string): Promise<void> => {
    const created = await fetch(sourceUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: manifest(annotations, group)
    })
    assert.equal(created.status, 201, await created.text())
  }

  // The gated source delivers 4 records; its gate shows.
  await create({ 'delivery.shoal.dev/max-concurrency': '3' }, `${prefix}-g1`)
  await produce(4)
  await eventually(
    async () => (answered >= 4 && (await flowControl())?.[0]?.limit === 3 ? true : undefined),
    60_000,
    'the gated source delivered, its gate shown'
  )
  // Deleted, and created again without the annotations (a new consumer group: it delivers the topic again).
  const deleted = await fetch(`${sourceUrl}/gated`, { method: 'DELETE' })
  assert.equal(deleted.status, 200)
  await create({}, `${prefix}-g2`)
  // The new source delivers every record (4 again, 4 new) — ungated; then its status should have no flow control.
  await produce(4)
  await eventually(() => answered >= 12, 60_000, 'the new source delivered the topic')
  // Heartbeats come every 2 s: a fixed dispatcher's next ones leave the old gate out. Several go by in 20 s.
  let last: FlowControlRow[] | undefined
  await eventually(
    async () => {
      last = await flowControl()
      return last === undefined || last.length === 0
    },
    20_000,
    'no status.flowControl for a source without flow control annotations'
  ).catch((error: unknown) => {
    assert.fail(`${String(error)}; it shows ${JSON.stringify(last)}`)
  })
})
