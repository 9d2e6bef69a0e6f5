import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { DispatcherMetrics, startMetricsServer } from '../../src/metrics/index.ts'
import type { DispatcherView, SourcesView } from '../../src/metrics/index.ts'
import type { DeliveryOutcome } from '../../src/delivery/index.ts'
import { parseExposition, samplesOf, valueOf } from './prom-text.ts'

const A = 'KafkaSource/default/a'
const B = 'KafkaSource/default/b'
const C = 'KafkaSource/team-x/c'

function view(overrides: Partial<DispatcherView> = {}): DispatcherView {
  return {
    id: 'dispatcher-4',
    contract: new Map([
      [A, { slot: 'consumer', vreplicas: 2 }],
      ['PingSource/default/p', { slot: 'schedule', vreplicas: 1 }]
    ]),
    contractOffset: 41n,
    running: true,
    fenced: false,
    fences: 0,
    ...overrides
  }
}

/** A data plane whose in-flight counts the test sets. */
class FakePlane implements SourcesView {
  inFlight = new Map<string, number>()
  status() {
    return [...this.inFlight].map(([source, inFlight]) => ({ source, inFlight }))
  }
}

function deliver(metrics: DispatcherMetrics, sourceKey: string, outcome: DeliveryOutcome, latencyMs = 20): void {
  metrics.observer.onOutcome?.({ sourceKey, outcome, latencyMs })
}

const delivered: DeliveryOutcome = { kind: 'delivered', status: 202, attempts: 1 }

describe('DispatcherMetrics', () => {
  it('counts attempts, retries and outcomes per source, in its own registry, every series labelled with the dispatcher', async () => {
    const metrics = new DispatcherMetrics({ dispatcher: view(), capacity: { consumer: 8, schedule: 1000 } })
    const plane = new FakePlane()
    plane.inFlight.set(A, 3)
    metrics.track(plane)
    const { observer } = metrics
    observer.onAttempt?.({
      sourceKey: A,
      endpoint: 'sink',
      attempt: 1,
      status: 503,
      durationMs: 3,
      dispatchDelayMs: 1.5
    })
    observer.onRetry?.({ sourceKey: A, endpoint: 'sink', retry: 1, delayMs: 100 })
    observer.onAttempt?.({ sourceKey: A, endpoint: 'sink', attempt: 2, error: 'ECONNRESET', durationMs: 1 })
    observer.onAttempt?.({ sourceKey: A, endpoint: 'sink', attempt: 3, status: 202, durationMs: 2 })
    deliver(metrics, A, delivered, 250)
    observer.onAttempt?.({ sourceKey: A, endpoint: 'sink', attempt: 1, status: 400, durationMs: 2 })
    observer.onAttempt?.({ sourceKey: A, endpoint: 'dead-letter', attempt: 1, status: 200, durationMs: 2 })
    deliver(metrics, A, {
      kind: 'dead-lettered',
      status: 200,
      sinkStatus: 400,
      reason: 'x',
      attempts: 1,
      deadLetterAttempts: 1
    })
    deliver(metrics, A, { kind: 'dropped', reason: 'no dead letter sink', attempts: 1, deadLetterAttempts: 0 })
    deliver(metrics, A, { kind: 'aborted', attempts: 0, deadLetterAttempts: 0 })

    const m = parseExposition(await metrics.metrics())
    const a = { source: 'default/a', kind: 'KafkaSource' }
    assert.equal(valueOf(m, 'shoal_source_records_consumed_total', a), 3, 'aborted is not an outcome')
    assert.equal(valueOf(m, 'shoal_source_events_delivered_total', { ...a, endpoint: 'sink', status_class: '5xx' }), 1)
    assert.equal(
      valueOf(m, 'shoal_source_events_delivered_total', { ...a, endpoint: 'sink', status_class: 'network' }),
      1
    )
    assert.equal(valueOf(m, 'shoal_source_events_delivered_total', { ...a, endpoint: 'sink', status_class: '2xx' }), 1)
    assert.equal(valueOf(m, 'shoal_source_events_delivered_total', { ...a, endpoint: 'sink', status_class: '4xx' }), 1)
    assert.equal(
      valueOf(m, 'shoal_source_events_delivered_total', { ...a, endpoint: 'dead-letter', status_class: '2xx' }),
      1
    )
    assert.equal(valueOf(m, 'shoal_source_delivery_retries_total', { ...a, endpoint: 'sink' }), 1)
    assert.equal(valueOf(m, 'shoal_source_events_dead_lettered_total', a), 1)
    assert.equal(valueOf(m, 'shoal_source_events_dropped_total', a), 1)
    assert.equal(valueOf(m, 'shoal_source_delivery_duration_seconds_count', a), 3)
    assert.equal(valueOf(m, 'shoal_source_delivery_duration_seconds_bucket', { ...a, le: '0.1' }), 2)
    assert.equal(valueOf(m, 'shoal_source_delivery_duration_seconds_bucket', { ...a, le: '0.25' }), 3)
    assert.equal(valueOf(m, 'shoal_source_in_flight', a), 3)
    assert.equal(valueOf(m, 'shoal_source_dispatch_delay_seconds_count', a), 1, 'only attempts that carry it')
    assert.equal(valueOf(m, 'shoal_source_dispatch_delay_seconds_bucket', { ...a, le: '0.001' }), 0)
    assert.equal(valueOf(m, 'shoal_source_dispatch_delay_seconds_bucket', { ...a, le: '0.0025' }), 1)
    assert.equal(valueOf(m, 'shoal_dispatcher_capacity', { slot: 'consumer' }), 8)
    assert.equal(valueOf(m, 'shoal_dispatcher_capacity', { slot: 'schedule' }), 1000)
    assert.equal(valueOf(m, 'shoal_dispatcher_used', { slot: 'consumer' }), 2)
    assert.equal(valueOf(m, 'shoal_dispatcher_used', { slot: 'schedule' }), 1)
    assert.equal(valueOf(m, 'shoal_dispatcher_contract_offset'), 41)
    assert.equal(valueOf(m, 'shoal_dispatcher_fenced'), 0)
    assert.equal(m.get('shoal_source_delivery_duration_seconds')?.type, 'histogram')
    assert.equal(m.get('shoal_source_records_consumed_total')?.type, 'counter')
    for (const family of m.values()) {
      for (const sample of family.samples) assert.equal(sample.labels['dispatcher'], 'dispatcher-4', sample.name)
    }
    assert.equal(m.has('process_cpu_seconds_total'), false, 'process metrics only when asked')
  })

  it('shows the lag of each labelled source per owned partition and in all; unlabelled ones add to the _other total', async () => {
    const metrics = new DispatcherMetrics({
      dispatcher: view(),
      capacity: { consumer: 8, schedule: 0 },
      maxSourceLabels: 1
    })
    const lags = new Map([
      [
        A,
        [
          { topic: 'orders', partition: 0, lag: 5 },
          { topic: 'orders', partition: 3, lag: 7 }
        ]
      ],
      [B, [{ topic: 'refunds', partition: 1, lag: 11 }]]
    ])
    metrics.track({ status: () => [...lags].map(([source, partitions]) => ({ source, inFlight: 0, partitions })) })
    let m = parseExposition(await metrics.metrics())
    assert.equal(valueOf(m, 'shoal_source_owned_lag', { source: 'default/a' }), 12)
    assert.equal(valueOf(m, 'shoal_source_partition_lag', { source: 'default/a', topic: 'orders', partition: '3' }), 7)
    assert.equal(valueOf(m, 'shoal_source_owned_lag', { source: '_other' }), 11)
    assert.deepEqual(
      samplesOf(m, 'shoal_source_partition_lag').map(s => s.labels['source']),
      ['default/a', 'default/a'],
      'no per-partition series for sources without a label of their own'
    )
    // A partition that moved to another dispatcher leaves no stale series.
    lags.set(A, [{ topic: 'orders', partition: 0, lag: 0 }])
    m = parseExposition(await metrics.metrics())
    assert.equal(valueOf(m, 'shoal_source_owned_lag', { source: 'default/a' }), 0)
    assert.equal(samplesOf(m, 'shoal_source_partition_lag').length, 1)
  })

  it('gives at most N sources a label of their own; the rest count under source="_other"', async () => {
    let now = 0
    const metrics = new DispatcherMetrics({
      dispatcher: view(),
      capacity: { consumer: 8, schedule: 0 },
      maxSourceLabels: 2,
      rankIntervalMs: 60_000,
      now: () => now
    })
    const plane = new FakePlane()
    metrics.track(plane)
    plane.inFlight = new Map([
      [A, 0],
      [B, 1],
      [C, 4]
    ])
    deliver(metrics, A, delivered)
    deliver(metrics, B, delivered)
    deliver(metrics, C, delivered) // no room left: C goes to _other until the next ranking
    // The first scrape ranks: C (4 in flight + 1) and B (1 + 1) beat A (0 + 1); A's series go.
    let m = parseExposition(await metrics.metrics())
    const other = { source: '_other', kind: 'KafkaSource' }
    assert.equal(valueOf(m, 'shoal_source_records_consumed_total', { source: 'default/a' }), undefined)
    assert.equal(valueOf(m, 'shoal_source_records_consumed_total', { source: 'default/b' }), 1)
    assert.equal(valueOf(m, 'shoal_source_records_consumed_total', { source: 'team-x/c' }), undefined, 'new series')
    assert.equal(valueOf(m, 'shoal_source_records_consumed_total', other), 1)
    assert.equal(valueOf(m, 'shoal_source_in_flight', { source: 'team-x/c' }), 4)
    assert.equal(valueOf(m, 'shoal_source_in_flight', other), 0)
    assert.equal(valueOf(m, 'shoal_dispatcher_sources', { labelled: 'true' }), 2)
    assert.equal(valueOf(m, 'shoal_dispatcher_sources', { labelled: 'false' }), 1)

    // A, unlabelled now, counts under _other (which only grows); C counts under its own label from zero.
    deliver(metrics, A, delivered)
    deliver(metrics, C, delivered)
    m = parseExposition(await metrics.metrics())
    assert.equal(valueOf(m, 'shoal_source_records_consumed_total', other), 2)
    assert.equal(valueOf(m, 'shoal_source_records_consumed_total', { source: 'team-x/c' }), 1)

    // Within the interval nothing moves; after it, the busiest win again: A (6 since the last ranking) and, of
    // B and C (1 each), the first by key, both being labelled.
    for (let i = 0; i < 5; i++) deliver(metrics, A, delivered)
    plane.inFlight.set(C, 0)
    m = parseExposition(await metrics.metrics())
    assert.equal(valueOf(m, 'shoal_source_records_consumed_total', other), 7)
    now += 60_000
    m = parseExposition(await metrics.metrics())
    assert.equal(valueOf(m, 'shoal_source_records_consumed_total', { source: 'team-x/c' }), undefined, 'C lost')
    assert.equal(valueOf(m, 'shoal_source_records_consumed_total', { source: 'default/b' }), 1, 'B kept')
    assert.equal(valueOf(m, 'shoal_source_records_consumed_total', { source: 'default/a' }), undefined, 'new series')
    assert.equal(valueOf(m, 'shoal_source_in_flight', { source: 'default/a' }), 0)
    assert.equal(valueOf(m, 'shoal_source_records_consumed_total', other), 7, '_other never goes down')
    deliver(metrics, A, delivered)
    m = parseExposition(await metrics.metrics())
    assert.equal(valueOf(m, 'shoal_source_records_consumed_total', { source: 'default/a' }), 1)

    // Sources that leave the dispatcher lose their labels at the next ranking, and their series go.
    plane.inFlight.delete(B)
    plane.inFlight.delete(C)
    now += 60_000
    m = parseExposition(await metrics.metrics())
    assert.equal(valueOf(m, 'shoal_source_records_consumed_total', { source: 'default/b' }), undefined)
    assert.equal(valueOf(m, 'shoal_source_records_consumed_total', { source: 'default/a' }), 1)
    assert.deepEqual(
      samplesOf(m, 'shoal_source_in_flight').map(s => s.labels['source']),
      ['default/a']
    )
    assert.equal(valueOf(m, 'shoal_dispatcher_sources', { labelled: 'true' }), 1)
    assert.equal(valueOf(m, 'shoal_dispatcher_sources', { labelled: 'false' }), 0)
  })

  it('labels a source the data plane starts at once while there is room, not at the next ranking', async () => {
    const metrics = new DispatcherMetrics({ dispatcher: view(), capacity: { consumer: 8, schedule: 0 }, now: () => 0 })
    const plane = new FakePlane()
    metrics.track(plane)
    await metrics.metrics() // ranks nothing: no source yet
    plane.inFlight.set(A, 0)
    plane.inFlight.set(B, 2)
    const m = parseExposition(await metrics.metrics())
    assert.equal(valueOf(m, 'shoal_source_in_flight', { source: 'default/a' }), 0)
    assert.equal(valueOf(m, 'shoal_source_in_flight', { source: 'default/b' }), 2)
    assert.equal(valueOf(m, 'shoal_source_in_flight', { source: '_other' }), undefined)
  })

  it('reports health: running and fenced are healthy, stopped is not', () => {
    const health = (v: Partial<DispatcherView>) =>
      new DispatcherMetrics({ dispatcher: view(v), capacity: { consumer: 1, schedule: 1 } }).health()
    assert.deepEqual(health({}), { ok: true, status: 'running' })
    assert.deepEqual(health({ running: false, fenced: true }), { ok: true, status: 'fenced' })
    assert.deepEqual(health({ running: false }), { ok: false, status: 'stopped' })
  })

  it('keeps several dispatchers in one process apart', async () => {
    const one = new DispatcherMetrics({
      dispatcher: view({ id: 'dispatcher-1' }),
      capacity: { consumer: 1, schedule: 1 }
    })
    const two = new DispatcherMetrics({
      dispatcher: view({ id: 'dispatcher-2' }),
      capacity: { consumer: 2, schedule: 1 }
    })
    deliver(one, A, delivered)
    const m1 = parseExposition(await one.metrics())
    const m2 = parseExposition(await two.metrics())
    assert.equal(valueOf(m1, 'shoal_source_records_consumed_total', { source: 'default/a' }), 1)
    assert.equal(valueOf(m2, 'shoal_source_records_consumed_total', { source: 'default/a' }), undefined)
    assert.equal(valueOf(m2, 'shoal_dispatcher_capacity', { slot: 'consumer', dispatcher: 'dispatcher-2' }), 2)
  })
})

describe('the metrics server', () => {
  it('serves /metrics and /healthz, and nothing else', async () => {
    let running = true
    const metrics = new DispatcherMetrics({
      dispatcher: {
        ...view(),
        get running() {
          return running
        }
      },
      capacity: { consumer: 1, schedule: 1 },
      processMetrics: true
    })
    const server = await startMetricsServer({ metrics, port: 0, host: '127.0.0.1', health: () => metrics.health() })
    try {
      const scraped = await fetch(`${server.url}/metrics`)
      assert.equal(scraped.status, 200)
      assert.match(String(scraped.headers.get('content-type')), /^text\/plain; version=0\.0\.4/)
      const m = parseExposition(await scraped.text())
      assert.ok(m.has('process_cpu_seconds_total'))
      assert.equal(valueOf(m, 'shoal_dispatcher_capacity', { slot: 'consumer' }), 1)

      const healthy = await fetch(`${server.url}/healthz`)
      assert.equal(healthy.status, 200)
      assert.deepEqual(await healthy.json(), { ok: true, status: 'running' })
      running = false
      const stopped = await fetch(`${server.url}/healthz`)
      assert.equal(stopped.status, 503)
      assert.deepEqual(await stopped.json(), { ok: false, status: 'stopped' })

      assert.equal((await fetch(`${server.url}/nope`)).status, 404)
      assert.equal((await fetch(`${server.url}/metrics`, { method: 'POST' })).status, 405)
      const head = await fetch(`${server.url}/metrics`, { method: 'HEAD' })
      assert.equal(head.status, 200)
      assert.equal(await head.text(), '')
    } finally {
      await server.close()
    }
  })

  it('says which port is taken', async () => {
    const first = await startMetricsServer({
      metrics: { contentType: 'text/plain', metrics: async () => '' },
      port: 0,
      host: '127.0.0.1'
    })
    try {
      await assert.rejects(
        startMetricsServer({
          metrics: { contentType: 'text/plain', metrics: async () => '' },
          port: first.port,
          host: '127.0.0.1'
        }),
        { code: 'SHOAL_PORT_IN_USE' }
      )
    } finally {
      await first.close()
    }
  })
})
