import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, it } from 'node:test'
import { ControllerMetrics, DispatcherMetrics } from '../../src/metrics/index.ts'
import { idleDispatcher } from './idle-dispatcher.ts'

describe('docs/metrics.md', () => {
  it('lists every metric a dispatcher or a controller serves, with its type, and no other', async () => {
    const docs = readFileSync(new URL('../../docs/metrics.md', import.meta.url), 'utf8')
    const documented = new Map(
      [...docs.matchAll(/^\| `(shoal_[a-z_]+)` \| (counter|gauge|histogram) \|/gm)].map(m => [m[1], m[2]])
    )
    const metrics = new DispatcherMetrics({
      dispatcher: idleDispatcher(),
      capacity: { consumer: 1, schedule: 1 }
    })
    const controller = new ControllerMetrics({
      replicaId: 'c-0',
      view: { buckets: () => ({ owned: 1, total: 1 }), leader: () => true, sources: () => [], lag: () => new Map() }
    })
    const served = new Map(
      [...(await metrics.registry.getMetricsAsJSON()), ...(await controller.registry.getMetricsAsJSON())].map(
        metric => [metric.name, String(metric.type)]
      )
    )
    assert.deepEqual(documented, served)
  })
})
