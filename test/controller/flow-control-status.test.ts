// Per-sink flow control as `shoal describe` and the dashboard show it: a KafkaSource limited to 2 requests in flight
// to a sink that holds every request; a real controller, a real dispatcher with its data plane, the real broker, and
// the dashboard in a real browser.
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { once } from 'node:events'
import { createServer } from 'node:http'
import type { ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { test } from 'node:test'
import { Producer } from '@platformatic/kafka'
import { chromium } from 'playwright-core'
import { main } from '../../src/cli/main.ts'
import type { UiSnapshot } from '../../src/ui/index.ts'
import { captureIo } from '../cli/capture.ts'
import { brokers, createTopic, uniqueName } from '../helpers/kafka.ts'
import { eventually } from '../helpers/wait.ts'
import { startOneDispatcher } from '../helpers/one-dispatcher.ts'
import type { FlowControlRow } from '../../src/api/index.ts'

const RECORDS = 12
const CHROMIUM = process.env['SHOAL_CHROMIUM'] ?? '/usr/bin/chromium'

test('a source’s flow control limit, sink, requests in flight and queued show in its API status, in describe and on the dashboard', async t => {
  const prefix = uniqueName('t-flow-status')
  const topic = uniqueName('flow-status')
  await createTopic(topic, { partitions: 2 })
  // The independent truth: requests the sink holds now, and the most it ever held at once.
  let release = false
  const held: ServerResponse[] = []
  let maxHeld = 0
  let answered = 0
  const sink = createServer((req, res) => {
    req.resume()
    if (release) {
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
  const stack = await startOneDispatcher(prefix)
  const { controller } = stack
  t.after(async () => {
    release = true
    for (const res of held.splice(0)) res.writeHead(202).end()
    await stack.close()
    sink.closeAllConnections()
    sink.close()
  })
  const sourceUrl = `${controller.url}/apis/sources.knative.dev/v1beta1/namespaces/default/kafkasources`
  const created = await fetch(sourceUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      apiVersion: 'sources.knative.dev/v1beta1',
      kind: 'KafkaSource',
      metadata: { name: 'gated', annotations: { 'delivery.shoal.dev/max-concurrency': '2' } },
      spec: {
        bootstrapServers: brokers(),
        topics: [topic],
        consumers: 1,
        ordering: 'unordered',
        initialOffset: 'earliest',
        sink: { uri: `${origin}/` }
      }
    })
  })
  assert.equal(created.status, 201)
  const producer = new Producer({ clientId: 'test', bootstrapBrokers: brokers(), idempotent: true })
  await producer.send({
    acks: -1,
    messages: Array.from({ length: RECORDS }, (_, i) => ({ topic, value: Buffer.from(`r${i}`), partition: i % 2 }))
  })
  await producer.close()

  const flowControl = async (): Promise<FlowControlRow[] | undefined> => {
    const answer = await fetch(`${sourceUrl}/gated`)
    const body = (await answer.json()) as { status?: { flowControl?: FlowControlRow[] } }
    return body.status?.flowControl
  }
  // The sink holds 2 (the limit) and the other records wait in the gate: a heartbeat reports it.
  const rows = await eventually(
    async () => {
      const shown = await flowControl()
      return held.length === 2 && shown?.[0]?.inFlight === 2 && shown[0].queued === RECORDS - 2 ? shown : undefined
    },
    60_000,
    'status.flowControl with 2 in flight and the rest queued'
  )
  assert.deepEqual(rows, [
    { dispatcher: 'dispatcher-0', sink: origin, adaptive: false, limit: 2, inFlight: 2, queued: RECORDS - 2 }
  ])
  assert.equal(maxHeld, 2)

  const cli = captureIo({ env: { SHOAL_SERVER: controller.url } })
  assert.equal(await main(['describe', 'kafkasource', 'gated'], cli.io), 0, cli.stderr())
  const described = cli.stdout()
  assert.match(described, /^ {2}Flow Control:$/m, described)
  assert.match(described, /^ {4}Dispatcher +Sink +Limit +In Flight +Queued +Latency$/m, described)
  assert.match(described, new RegExp(`^ {4}dispatcher-0 +${origin} +2 +2 +${RECORDS - 2} +<none>$`, 'm'), described)

  const state = (await (await fetch(`${controller.url}/ui/state`)).json()) as UiSnapshot
  const shown = state.sources.find(s => s.name === 'default/gated')
  assert.deepEqual(
    shown?.flow?.map(f => [f.dispatcher, f.sink, f.limit, f.inFlight]),
    [['dispatcher-0', origin, 2, 2]]
  )
  // And the page renders it (Debian's chromium, as test/ui/ui-browser.test.ts).
  assert.ok(existsSync(CHROMIUM), `no browser at ${CHROMIUM}: run scripts/setup.sh (it installs Debian's chromium)`)
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] })
  try {
    const page = await browser.newPage()
    await page.goto(`${controller.url}/ui`)
    const row = '[data-flow-row="default/gated"][data-dispatcher-id="dispatcher-0"]'
    await page.waitForSelector(row, { timeout: 60_000 })
    const cells = await page.$$eval(`${row} td`, tds => tds.map(td => td.textContent?.trim() ?? ''))
    assert.deepEqual(cells, ['default/gated', 'dispatcher-0', origin, '2', '2', String(RECORDS - 2), '—'])
  } finally {
    await browser.close()
  }

  // Once the sink answers, everything is delivered, the gate empties, and a later heartbeat says so.
  release = true
  for (const res of held.splice(0)) {
    answered++
    res.writeHead(202).end()
  }
  const idle = await eventually(
    async () => {
      const shown = await flowControl()
      return answered >= RECORDS && shown?.[0]?.inFlight === 0 && shown[0].queued === 0 ? shown[0] : undefined
    },
    60_000,
    'every record answered, the gate empty'
  )
  assert.equal(idle.limit, 2)
  assert.equal(maxHeld, 2)
})
