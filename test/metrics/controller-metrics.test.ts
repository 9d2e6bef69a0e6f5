import assert from 'node:assert/strict'
import { test } from 'node:test'
import { lagBetween, lagFigures, ratesBetween } from '../../src/lag/index.ts'
import { ControllerMetrics, routeOf } from '../../src/metrics/index.ts'
import type { LagSnapshot, SourcePlacementView } from '../../src/metrics/index.ts'
import { parseExposition } from './prom-text.ts'

function reading(lag: number): LagSnapshot {
  return {
    at: 0,
    lag,
    committed: 0,
    committedPartitions: 0,
    end: lag,
    partitions: 1,
    consumedPerSec: 0,
    producedPerSec: 0
  }
}

function metricsWith(options: {
  leader: boolean
  sources: SourcePlacementView[]
  lag?: Map<string, LagSnapshot>
  max?: number
}) {
  return new ControllerMetrics({
    replicaId: 'c-1',
    ...(options.max === undefined ? {} : { maxSourceLabels: options.max }),
    view: {
      buckets: () => ({ owned: 3, total: 8 }),
      leader: () => options.leader,
      sources: () => options.sources,
      lag: () => options.lag ?? new Map()
    }
  })
}

function value(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const families = parseExposition(text)
  const family = families.get(name) ?? families.get(name.replace(/_(bucket|sum|count)$/, ''))
  return family?.samples.find(s => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    ?.value
}

test('a controller reports its buckets, leadership, passes and requests, labelled with its replica', async () => {
  const metrics = metricsWith({ leader: true, sources: [] })
  metrics.observePass(0.02)
  metrics.observeRequest('GET', '/apis/sources.knative.dev/v1beta1/kafkasources', 200, 0.003)
  metrics.observeRequest('PUT', '/apis/sources.knative.dev/v1beta1/namespaces/a/kafkasources/x', 409, 0.004)
  const text = await metrics.metrics()
  assert.equal(value(text, 'shoal_controller_buckets_owned', { controller: 'c-1' }), 3)
  assert.equal(value(text, 'shoal_controller_buckets'), 8)
  assert.equal(value(text, 'shoal_controller_leader'), 1)
  assert.equal(value(text, 'shoal_scheduler_pass_duration_seconds_count'), 1)
  assert.equal(
    value(text, 'shoal_api_request_duration_seconds_count', { method: 'PUT', route: 'resources', code: '4xx' }),
    1
  )
  assert.doesNotMatch(text, /kafkasources\/x/, 'no resource name in a label')
})

test('per-source figures come from the leader only, top N by pending then lag, the rest summed under _other', async () => {
  const sources = [
    { key: 'KafkaSource/a/quiet', desired: 2, placed: 2, pending: 0 },
    { key: 'KafkaSource/a/lagging', desired: 3, placed: 3, pending: 0 },
    { key: 'KafkaSource/a/stuck', desired: 4, placed: 1, pending: 3 },
    { key: 'PingSource/a/tick', desired: 1, placed: 1, pending: 0 }
  ]
  const lag = new Map([
    ['KafkaSource/a/quiet', reading(5)],
    ['KafkaSource/a/lagging', reading(900)],
    ['KafkaSource/a/stuck', reading(1)]
  ])
  const text = await metricsWith({ leader: true, sources, lag, max: 2 }).metrics()
  assert.equal(value(text, 'shoal_source_consumers_pending', { source: 'a/stuck' }), 3)
  assert.equal(value(text, 'shoal_source_lag', { source: 'a/lagging' }), 900)
  assert.equal(value(text, 'shoal_source_lag', { source: 'a/quiet' }), undefined)
  assert.equal(value(text, 'shoal_source_lag', { source: '_other', kind: 'KafkaSource' }), 5)
  assert.equal(value(text, 'shoal_source_consumers_desired', { source: '_other', kind: 'PingSource' }), 1)
  assert.equal(value(text, 'shoal_controller_sources_labelled'), 2)

  const follower = await metricsWith({ leader: false, sources, lag }).metrics()
  assert.equal(value(follower, 'shoal_controller_leader'), 0)
  assert.equal(parseExposition(follower).get('shoal_source_lag')?.samples.length ?? 0, 0)
})

test('lag is end minus where the group reads from per partition, never negative, summed over every partition', () => {
  assert.equal(lagBetween(40n, 100n), 60n)
  assert.equal(lagBetween(55n, 50n), 0n)
  // The third partition was never committed: it counts from where initialOffset starts it (here the log start, 4).
  // Only real commits are summed as consumed.
  const partitions = [
    { committed: 40n, from: 40n, lastStable: 100n },
    { committed: 55n, from: 55n, lastStable: 50n },
    { committed: undefined, from: 4n, lastStable: 10n }
  ].map(p => ({ ...p, lag: lagBetween(p.from, p.lastStable) }))
  assert.deepEqual(lagFigures(partitions), { lag: 66, committed: 95, committedPartitions: 2, end: 160, partitions: 3 })
  assert.deepEqual(
    ratesBetween(
      { at: 0, lag: 0, committed: 100, committedPartitions: 1, end: 100, partitions: 1 },
      { at: 2_000, lag: 0, committed: 300, committedPartitions: 1, end: 500, partitions: 1 }
    ),
    { consumedPerSec: 100, producedPerSec: 200 }
  )
})

test('request routes are a bounded set', () => {
  assert.equal(routeOf('/apis/sources.knative.dev/v1/namespaces/x/pingsources/y'), 'resources')
  assert.equal(routeOf('/ui/events'), 'ui')
  assert.equal(routeOf('/metrics'), 'metrics')
  assert.equal(routeOf('/internal/v1/writes'), 'internal')
  assert.equal(routeOf('/whatever/123'), 'other')
})
