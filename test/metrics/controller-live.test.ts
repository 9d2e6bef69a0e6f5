import assert from 'node:assert/strict'
import { once } from 'node:events'
import { createServer } from 'node:http'
import type { ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { test } from 'node:test'
import { Producer } from '@platformatic/kafka'
import { brokers, createTopic, uniqueName } from '../helpers/kafka.ts'
import { eventually } from '../helpers/wait.ts'
import { parseExposition } from './prom-text.ts'
import { startOneDispatcher } from '../helpers/one-dispatcher.ts'

test('a controller’s /metrics shows a source’s placements and its lag, which falls to 0 once the sink answers', async t => {
  const prefix = uniqueName('t-ctl-metrics')
  const topic = uniqueName('ctl-metrics')
  await createTopic(topic, { partitions: 2 })
  // A sink that holds every request until released: nothing is committed meanwhile, so the lag stays.
  let release = false
  const held: ServerResponse[] = []
  const sink = createServer((req, res) => {
    req.resume()
    if (release) res.writeHead(202).end()
    else held.push(res)
  })
  sink.listen(0, '127.0.0.1')
  await once(sink, 'listening')
  const sinkUrl = `http://127.0.0.1:${(sink.address() as AddressInfo).port}/`
  const stack = await startOneDispatcher(prefix)
  const { controller } = stack
  t.after(async () => {
    release = true
    for (const res of held) res.writeHead(202).end()
    await stack.close()
    sink.closeAllConnections()
    sink.close()
  })
  const created = await fetch(`${controller.url}/apis/sources.knative.dev/v1beta1/namespaces/default/kafkasources`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      apiVersion: 'sources.knative.dev/v1beta1',
      kind: 'KafkaSource',
      metadata: { name: 'held' },
      spec: {
        bootstrapServers: brokers(),
        topics: [topic],
        consumers: 2,
        initialOffset: 'earliest',
        sink: { uri: sinkUrl }
      }
    })
  })
  assert.equal(created.status, 201)
  const producer = new Producer({ clientId: 'test', bootstrapBrokers: brokers(), idempotent: true })
  await producer.send({
    acks: -1,
    messages: Array.from({ length: 30 }, (_, i) => ({ topic, value: Buffer.from(`r${i}`), partition: i % 2 }))
  })
  await producer.close()

  const gauge = async (name: string) => {
    const text = await (await fetch(`${controller.url}/metrics`)).text()
    return parseExposition(text)
      .get(name)
      ?.samples.find(s => s.labels['source'] === 'default/held')?.value
  }
  // The lag shows once the initial offsets are committed, which need not wait for the scheduler to place the
  // source: wait for both.
  await eventually(
    async () =>
      (await gauge('shoal_source_lag')) === 30 && (await gauge('shoal_source_consumers_placed')) === 2
        ? true
        : undefined,
    60_000,
    'lag 30, both consumers placed'
  )
  assert.equal(await gauge('shoal_source_lag'), 30)
  assert.equal(await gauge('shoal_source_consumers_desired'), 2)
  assert.equal(await gauge('shoal_source_consumers_placed'), 2)
  assert.equal(await gauge('shoal_source_consumers_pending'), 0)

  release = true
  for (const res of held.splice(0)) res.writeHead(202).end()
  await eventually(async () => ((await gauge('shoal_source_lag')) === 0 ? true : undefined), 60_000, 'lag 0')
  const text = await (await fetch(`${controller.url}/metrics`)).text()
  const families = parseExposition(text)
  assert.equal(families.get('shoal_controller_leader')?.samples[0]?.value, 1)
  assert.ok((families.get('shoal_scheduler_pass_duration_seconds')?.samples.length ?? 0) > 0)
})
