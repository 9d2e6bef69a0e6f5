// The dashboard end to end in a real browser: Debian's chromium, driven by playwright-core (scripts/setup.sh
// installs chromium when it is missing). A source is applied, its placements appear on the page; a dispatcher is
// killed, and they move to the others on the page, live.
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { copyFile, mkdir, mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { chromium } from 'playwright-core'
import type { Page } from 'playwright-core'
import { startController } from '../../src/controller/index.ts'
import { createLogger } from '../../src/log/index.ts'
import { brokers, createTopic, uniqueName } from '../helpers/kafka.ts'
import { eventually } from '../helpers/wait.ts'
import { startDispatcherProcess } from '../helpers/dispatchers.ts'
import type { DispatcherProcess } from '../helpers/dispatchers.ts'

const CHROMIUM = process.env['SHOAL_CHROMIUM'] ?? '/usr/bin/chromium'

/** vreplicas of a source the page shows on each dispatcher. */
async function shown(page: Page, source: string): Promise<Record<string, number>> {
  return page.$$eval(
    '[data-dispatcher]',
    (nodes, name) =>
      Object.fromEntries(
        nodes.map(n => [
          n.getAttribute('data-dispatcher') ?? '',
          n.querySelectorAll(`[data-vreplica][data-source="${name}"]`).length
        ])
      ),
    source
  )
}

test('the dashboard shows a source’s placements per zone and dispatcher, and shows them move when a dispatcher dies', async t => {
  assert.ok(existsSync(CHROMIUM), `no browser at ${CHROMIUM}: run scripts/setup.sh (it installs Debian's chromium)`)
  const prefix = uniqueName('t-ui')
  const topic = uniqueName('ui')
  await createTopic(topic, { partitions: 6 })
  const controller = await startController({
    brokers: brokers(),
    port: 0,
    prefix,
    buckets: 4,
    livenessTimeoutMs: 4_000,
    logger: createLogger('test', 'error')
  })
  const dispatchers: DispatcherProcess[] = []
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] })
  t.after(async () => {
    await browser.close()
    await controller.close()
    await Promise.all(dispatchers.map(d => d.stop()))
  })
  for (const [i, zone] of ['a', 'b', 'c'].entries())
    dispatchers.push(
      await startDispatcherProcess(prefix, `dispatcher-${i}`, zone, `node-${zone}`, 4, ['--liveness-timeout', '4s'])
    )
  const page = await browser.newPage({ viewport: { width: 1280, height: 820 } })
  await page.goto(`${controller.url}/ui`)
  // Playwright's default 30 s is short for a page, a controller and three dispatchers starting on a busy machine.
  await page.waitForSelector('[data-zone="c"] [data-dispatcher="dispatcher-2"]', { timeout: 60_000 })

  const created = await fetch(`${controller.url}/apis/sources.knative.dev/v1beta1/namespaces/default/kafkasources`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      apiVersion: 'sources.knative.dev/v1beta1',
      kind: 'KafkaSource',
      metadata: { name: 'orders' },
      spec: { bootstrapServers: brokers(), topics: [topic], consumers: 6, sink: { uri: 'http://127.0.0.1:9/' } }
    })
  })
  assert.equal(created.status, 201)
  // Spread over the three zones, two each, as the scheduler places them — seen on the page, not in the API.
  await eventually(
    async () => {
      const on = await shown(page, 'default/orders')
      return on['dispatcher-0'] === 2 && on['dispatcher-1'] === 2 && on['dispatcher-2'] === 2 ? on : undefined
    },
    60_000,
    'two vreplicas of default/orders on each dispatcher'
  )
  await page.waitForSelector('[data-source-row="default/orders"] .badge.True', { timeout: 60_000 })

  await dispatchers[2]!.stop('SIGKILL')
  const moved = await eventually(
    async () => {
      const on = await shown(page, 'default/orders')
      const dead = await page.getAttribute('[data-dispatcher="dispatcher-2"]', 'data-state').catch(() => null)
      return (on['dispatcher-0'] ?? 0) + (on['dispatcher-1'] ?? 0) === 6 && !on['dispatcher-2'] && dead === 'Dead'
        ? on
        : undefined
    },
    60_000,
    'the six vreplicas on dispatcher-0 and dispatcher-1, dispatcher-2 shown dead'
  )
  assert.deepEqual(moved, { 'dispatcher-0': 3, 'dispatcher-1': 3, 'dispatcher-2': 0 })

  const dir = await mkdtemp(join(tmpdir(), 'shoal-ui-'))
  const screenshot = join(dir, 'ui.png')
  await page.screenshot({ path: screenshot, fullPage: true })
  assert.ok(existsSync(screenshot))
  // SHOAL_UI_SCREENSHOT=docs/img/ui.png keeps a copy (how the README's picture was made).
  const keep = process.env['SHOAL_UI_SCREENSHOT']
  if (keep) {
    await mkdir(join(keep, '..'), { recursive: true })
    await copyFile(screenshot, keep)
  }
})
