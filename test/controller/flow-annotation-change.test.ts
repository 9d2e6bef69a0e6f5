// A flow control annotation changed on a running KafkaSource. The gate has `configure()` for a
// changed spec, but the data plane builds a source's delivery target once, when its runner starts, and restarts a
// runner only when `runnerSpecOf` changes — which holds the spec and the batch annotations, not the flow control
// ones. So a tenant who lowers max-concurrency because the sink is drowning gets no change until the dispatcher
// restarts. A real controller, dispatcher, broker and sink; the sink counts the requests it holds at once.
import assert from 'node:assert/strict'
import { once } from 'node:events'
import { createServer } from 'node:http'
import type { ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { test } from 'node:test'
import { Producer } from '@platformatic/kafka'
import { brokers, createTopic, uniqueName } from '../helpers/kafka.ts'
import { eventually } from '../helpers/wait.ts'
import { startOneDispatcher } from '../helpers/one-dispatcher.ts'
import type { FlowControlRow } from '../../src/api/index.ts'

test('lowering delivery.shoal.dev/max-concurrency on a running KafkaSource takes effect', async t => {
  const prefix = uniqueName('t-review-flow-change')
  const topic = uniqueName('review-flow-change')
  await createTopic(topic, { partitions: 4 })
  // The independent truth: requests the sink holds now, and the most it held at once since `maxHeld` was reset.
  let holding = true
  const held: ServerResponse[] = []
  let maxHeld = 0
  let answered = 0
  const sink = createServer((req, res) => {
    req.resume()
    if (!holding) {
      answered++
      res.writeHead(202).end()
      return
    }
    held.push(res)
    maxHeld = Math.max(maxHeld, held.length)
  })
  sink.listen(0, '127.0.0.1')
  await once(sink, 'listening')
  const origin = `http://127.0.0.1:${(sink.address() as AddressInfo).port}`
  const releaseAll = (): void => {
    for (const res of held.splice(0)) {
      answered++
      res.writeHead(202).end()
    }
  }
  const stack = await startOneDispatcher(prefix)
  const { controller } = stack
  const producer = new Producer({ clientId: 'review', bootstrapBrokers: brokers(), idempotent: true })
  t.after(async () => {
    holding = false
    releaseAll()
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
        return { topic, value: Buffer.from(`r${i}`), partition: i % 4 }
      })
    })
  }
  const sourceUrl = `${controller.url}/apis/sources.knative.dev/v1beta1/namespaces/default/kafkasources`
  const manifest = (maxConcurrency: string): string =>
    JSON.stringify({
      apiVersion: 'sources.knative.dev/v1beta1',
      kind: 'KafkaSource',
      metadata: { name: 'gated', annotations: { 'delivery.shoal.dev/max-concurrency': maxConcurrency } },
      spec: {
        bootstrapServers: brokers(),
        topics: [topic],
        consumers: 1,
        ordering: 'unordered',
        initialOffset: 'earliest',
        sink: { uri: `${origin}/` }
      }
    })
  const created = await fetch(sourceUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: manifest('4')
  })
  assert.equal(created.status, 201)
  const flowControl = async (): Promise<FlowControlRow[] | undefined> => {
    const body = (await (await fetch(`${sourceUrl}/gated`)).json()) as { status?: { flowControl?: FlowControlRow[] } }
    return body.status?.flowControl
  }

  // Phase 1: max-concurrency 4 holds: 8 records, the sink holds 4, the gate shows limit 4 and 4 queued.
  await produce(8)
  await eventually(
    async () => {
      const rows = await flowControl()
      return held.length === 4 && rows?.[0]?.limit === 4 && rows[0].queued === 4 ? true : undefined
    },
    60_000,
    'limit 4: the sink holds 4, 4 wait in the gate'
  )
  assert.equal(maxHeld, 4)
  holding = false
  releaseAll()
  await eventually(() => answered >= 8, 60_000, 'the first 8 answered')

  // Phase 2: the tenant lowers the limit to 1 (annotation only, as `kubectl annotate` / `shoal apply` does).
  const updated = await fetch(`${sourceUrl}/gated`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: manifest('1')
  })
  assert.equal(updated.status, 200, await updated.text())
  // The gate is reconfigured on a request that carries the new spec; keep records coming until the gate says 1.
  await eventually(
    async () => {
      await produce(1)
      const rows = await flowControl()
      return rows?.[0]?.limit === 1 ? true : undefined
    },
    30_000,
    'the gate to show the new limit 1 (it keeps limit 4: the running source never reads the changed annotation)',
    500
  )
  await eventually(() => answered >= produced, 60_000, 'every record so far answered')

  // And the sink sees it: 8 more records, at most 1 request at a time.
  holding = true
  maxHeld = 0
  await produce(8)
  let last: FlowControlRow[] | undefined
  await eventually(
    async () => {
      const rows = (last = await flowControl())
      // At least the 8: the restart that applied the change may deliver again what was not committed (at least once).
      return held.length >= 1 && rows?.[0] !== undefined && rows[0].inFlight + rows[0].queued >= 8 ? true : undefined
    },
    60_000,
    'the 8 new records (at least) in the gate'
  ).catch((error: unknown) => {
    throw new Error(`${String(error)}: the sink holds ${held.length}, the rows say ${JSON.stringify(last)}`)
  })
  assert.equal(maxHeld, 1, 'requests held at once by the sink after max-concurrency was lowered to 1')
})
