import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { SinkFlowState } from '../../src/delivery/index.ts'
import { DispatcherMetrics } from '../../src/metrics/index.ts'
import { parseExposition, samplesOf, valueOf } from './prom-text.ts'
import { idleDispatcher } from './idle-dispatcher.ts'

describe('per-sink flow control metrics', () => {
  it('shows each gated source and sink: limit, in flight, queued, latency; a gone gate loses its series', async () => {
    const metrics = new DispatcherMetrics({
      dispatcher: idleDispatcher('d-0'),
      capacity: { consumer: 1, schedule: 1 }
    })
    let states: SinkFlowState[] = [
      {
        sourceKey: 'KafkaSource/shop/orders',
        sink: 'http://sink:8080',
        adaptive: true,
        limit: 4,
        inFlight: 4,
        queued: 12,
        latencyMs: 1500
      },
      {
        sourceKey: 'KafkaSource/shop/fresh',
        sink: 'http://other:80',
        adaptive: false,
        limit: 8,
        inFlight: 0,
        queued: 0,
        latencyMs: undefined
      }
    ]
    metrics.trackSinks({ flow: () => states })
    const labels = { source: 'shop/orders', kind: 'KafkaSource', sink: 'http://sink:8080', dispatcher: 'd-0' }
    let families = parseExposition(await metrics.metrics())
    assert.equal(valueOf(families, 'shoal_sink_concurrency_limit', labels), 4)
    assert.equal(valueOf(families, 'shoal_sink_in_flight', labels), 4)
    assert.equal(valueOf(families, 'shoal_sink_queued', labels), 12)
    assert.equal(valueOf(families, 'shoal_sink_latency_seconds', labels), 1.5)
    assert.equal(valueOf(families, 'shoal_sink_concurrency_limit', { source: 'shop/fresh' }), 8)
    assert.equal(valueOf(families, 'shoal_sink_latency_seconds', { source: 'shop/fresh' }), undefined)
    states = []
    families = parseExposition(await metrics.metrics())
    assert.deepEqual(samplesOf(families, 'shoal_sink_concurrency_limit'), [])
  })
})
