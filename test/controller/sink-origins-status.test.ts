// A stalled sink as `shoal describe`, the API and the dashboard show it: a KafkaSource (no flow control annotation)
// to a sink that holds every request; a real controller, a real dispatcher with its data plane, the real broker, and
// the dashboard in a real browser. The oldest request in flight grows while the sink holds it, and is gone once it
// answers.
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
import type { SinkOriginRow } from '../../src/api/index.ts'
import type { UiSnapshot } from '../../src/ui/index.ts'
import { captureIo } from '../cli/capture.ts'
import { brokers, createTopic, uniqueName } from '../helpers/kafka.ts'
import { eventually } from '../helpers/wait.ts'
import { startOneDispatcher } from '../helpers/one-dispatcher.ts'

const RECORDS = 4
const CHROMIUM = process.env['SHOAL_CHROMIUM'] ?? '/usr/bin/chromium'

test('a sink holding its requests shows its oldest request in flight, growing, in the API status, in describe and on the dashboard', async t => {
  const prefix = uniqueName('t-origin-status')
  const topic = uniqueName('origin-status')
  await createTopic(topic, { partitions: 1 })
  // The independent truth: the requests the sink holds now, and when it got the first.
  let release = false
  const held: ServerResponse[] = []
  let firstHeldAt: number | undefined
  let answered = 0
  const sink = createServer((req, res) => {
    req.resume()
    if (release) {
      answered++
      res.writeHead(202).end()
      return
    }
    firstHeldAt ??= Date.now()
    held.push(res)
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
      metadata: { name: 'stalled' },
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
    messages: Array.from({ length: RECORDS }, (_, i) => ({ topic, value: Buffer.from(`r${i}`), partition: 0 }))
  })
  await producer.close()

  const sinkOrigins = async (): Promise<SinkOriginRow[] | undefined> => {
    const answer = await fetch(`${sourceUrl}/stalled`)
    const body = (await answer.json()) as { status?: { sinkOrigins?: SinkOriginRow[] } }
    return body.status?.sinkOrigins
  }
  // The sink holds every record; a heartbeat reports them in flight, the oldest over a second old.
  const first = await eventually(
    async () => {
      const shown = await sinkOrigins()
      return held.length === RECORDS && shown?.[0]?.inFlight === RECORDS && shown[0].oldestInFlightMs >= 1_000
        ? shown
        : undefined
    },
    60_000,
    () => `status.sinkOrigins with ${RECORDS} in flight (the sink holds ${held.length})`
  )
  assert.equal(first.length, 1)
  assert.deepEqual(
    { ...first[0], oldestInFlightMs: 0 },
    {
      dispatcher: 'dispatcher-0',
      origin,
      inFlight: RECORDS,
      oldestInFlightMs: 0,
      resent: 0,
      notAccepted: 0
    }
  )
  // The age of a request the sink holds: never much older than the sink has held it (the request started a
  // connect before the sink saw it; the heartbeat is a little behind, never ahead).
  assert.ok(first[0]!.oldestInFlightMs <= Date.now() - firstHeldAt! + 1_000, JSON.stringify(first))
  // A later heartbeat: the same request, older.
  await eventually(
    async () => ((await sinkOrigins())?.[0]?.oldestInFlightMs ?? 0) > first[0]!.oldestInFlightMs,
    30_000,
    'the oldest request in flight to grow older'
  )

  const cli = captureIo({ env: { SHOAL_SERVER: controller.url } })
  assert.equal(await main(['describe', 'kafkasource', 'stalled'], cli.io), 0, cli.stderr())
  const described = cli.stdout()
  assert.match(described, /^ {2}Sink Origins:$/m, described)
  assert.match(described, /^ {4}Dispatcher +Origin +In Flight +Oldest +Resent +Not Accepted$/m, described)
  assert.match(described, new RegExp(`^ {4}dispatcher-0 +${origin} +${RECORDS} +\\d+s +0 +0$`, 'm'), described)

  const state = (await (await fetch(`${controller.url}/ui/state`)).json()) as UiSnapshot
  const shown = state.sources.find(s => s.name === 'default/stalled')
  assert.deepEqual(
    shown?.origins?.map(o => [o.dispatcher, o.origin, o.inFlight]),
    [['dispatcher-0', origin, RECORDS]]
  )
  // And the page renders it (Debian's chromium, as test/ui/ui-browser.test.ts).
  assert.ok(existsSync(CHROMIUM), `no browser at ${CHROMIUM}: run scripts/setup.sh (it installs Debian's chromium)`)
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] })
  try {
    const page = await browser.newPage()
    await page.goto(`${controller.url}/ui`)
    const row = '[data-origin-row="default/stalled"][data-dispatcher-id="dispatcher-0"]'
    await page.waitForSelector(row, { timeout: 60_000 })
    const cells = await page.$$eval(`${row} td`, tds => tds.map(td => td.textContent?.trim() ?? ''))
    assert.deepEqual(cells.slice(0, 4), ['default/stalled', 'dispatcher-0', origin, String(RECORDS)])
    assert.match(cells[4] ?? '', /^\d+ s$/)
    assert.deepEqual(cells.slice(5), ['0', '0'])
  } finally {
    await browser.close()
  }

  // Once the sink answers, nothing is in flight and a later heartbeat says so: no oldest request.
  release = true
  for (const res of held.splice(0)) {
    answered++
    res.writeHead(202).end()
  }
  const idle = await eventually(
    async () => {
      const row = (await sinkOrigins())?.[0]
      return answered >= RECORDS && row?.inFlight === 0 ? row : undefined
    },
    60_000,
    'every record answered, nothing in flight'
  )
  assert.equal(idle.oldestInFlightMs, 0)
})
