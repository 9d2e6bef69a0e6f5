import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { test } from 'node:test'
import { ControllerMetrics, DispatcherMetrics } from '../../src/metrics/index.ts'
import { idleDispatcher } from './idle-dispatcher.ts'

interface Panel {
  readonly title: string
  readonly targets?: ReadonlyArray<{ readonly expr: string }>
}

test('the Grafana dashboard parses and names only metrics Shoal serves', async () => {
  const dashboard = JSON.parse(readFileSync(new URL('../../deploy/grafana/shoal.json', import.meta.url), 'utf8')) as {
    title: string
    panels: Panel[]
  }
  assert.equal(dashboard.title, 'Shoal')
  const dispatcher = new DispatcherMetrics({
    dispatcher: idleDispatcher(),
    capacity: { consumer: 1, schedule: 1 }
  })
  const controller = new ControllerMetrics({
    replicaId: 'c-0',
    view: { buckets: () => ({ owned: 1, total: 1 }), leader: () => true, sources: () => [], lag: () => new Map() }
  })
  const served = new Map(
    [...(await dispatcher.registry.getMetricsAsJSON()), ...(await controller.registry.getMetricsAsJSON())].map(m => [
      m.name,
      String(m.type)
    ])
  )
  const named = new Set<string>()
  for (const panel of dashboard.panels) {
    assert.ok((panel.targets ?? []).length > 0, `panel "${panel.title}" has no query`)
    for (const target of panel.targets ?? []) {
      for (const [name] of target.expr.matchAll(/\bshoal_[a-z0-9_]+/g)) {
        const histogram = /^(.*)_(bucket|sum|count)$/.exec(name)
        const base = histogram && served.get(histogram[1]!) === 'histogram' ? histogram[1]! : name
        assert.ok(served.has(base), `panel "${panel.title}" names ${name}, which Shoal does not serve`)
        named.add(base)
      }
    }
  }
  // What the issue asks the dashboard for: lag per source and throughput.
  assert.ok(named.has('shoal_source_lag'))
  assert.ok(named.has('shoal_source_records_consumed_total'))
})
