import assert from 'node:assert/strict'
import { once } from 'node:events'
import { createServer } from 'node:http'
import type { ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, describe, it } from 'node:test'
import { Deliverer, resolveDeliveryPolicy } from '../../src/delivery/index.ts'
import type { DeliveryTarget, OriginFigures } from '../../src/delivery/index.ts'
import { DispatcherMetrics } from '../../src/metrics/index.ts'
import { eventually } from '../helpers/wait.ts'
import { parseExposition, samplesOf, valueOf } from './prom-text.ts'
import { idleDispatcher } from './idle-dispatcher.ts'

const deliverers: Deliverer[] = []
after(async () => {
  await Promise.all(deliverers.map(d => d.close()))
})

function dispatcherMetrics(): DispatcherMetrics {
  return new DispatcherMetrics({
    dispatcher: idleDispatcher('d-0'),
    capacity: { consumer: 1, schedule: 1 }
  })
}

function origin(name: string, figures: Partial<OriginFigures>): OriginFigures {
  return {
    origin: name,
    proven: 0,
    window: 2,
    unproven: 0,
    waiting: 0,
    notAccepted: 0,
    connectFailures: 0,
    inFlight: 0,
    queued: 0,
    oldestInFlightMs: 0,
    resent: 0,
    ...figures
  }
}

function target(url: string): DeliveryTarget {
  return {
    sourceKey: 'KafkaSource/shop/orders',
    sink: { uri: url },
    policy: resolveDeliveryPolicy({ retry: 0, timeout: 'PT60S' })
  }
}

function event(id: string) {
  return {
    attributes: { specversion: '1.0' as const, id, source: '/test/sink-origin', type: 'dev.shoal.test' },
    extensions: {},
    data: Buffer.from('{}')
  }
}

describe('per sink origin metrics', () => {
  it('shows each origin: the oldest request in flight, in flight, queued, requests sent again, connections never accepted', async () => {
    const metrics = dispatcherMetrics()
    const stalled = origin('http://stalled:8080', {
      inFlight: 128,
      queued: 40,
      oldestInFlightMs: 95_000,
      resent: 12,
      notAccepted: 9
    })
    metrics.trackOrigins({ sinks: () => [stalled, origin('http://fine:80', { inFlight: 1, oldestInFlightMs: 3 })] })
    // A second deliverer in the same registry, with the same origin: in flight adds up, the oldest is the oldest.
    metrics.trackOrigins({
      sinks: () => [origin('http://stalled:8080', { inFlight: 2, oldestInFlightMs: 500, resent: 1 })]
    })
    const families = parseExposition(await metrics.metrics())
    const labels = { sink: 'http://stalled:8080', dispatcher: 'd-0' }
    assert.equal(valueOf(families, 'shoal_sink_oldest_in_flight_seconds', labels), 95)
    assert.equal(valueOf(families, 'shoal_sink_origin_in_flight', labels), 130)
    assert.equal(valueOf(families, 'shoal_sink_origin_queued', labels), 40)
    assert.equal(valueOf(families, 'shoal_sink_requests_resent_total', labels), 13)
    assert.equal(valueOf(families, 'shoal_sink_connections_not_accepted_total', labels), 9)
    assert.equal(valueOf(families, 'shoal_sink_oldest_in_flight_seconds', { sink: 'http://fine:80' }), 0.003)
    assert.equal(valueOf(families, 'shoal_sink_requests_resent_total', { sink: 'http://fine:80' }), 0)
    assert.equal(families.get('shoal_sink_requests_resent_total')?.type, 'counter')
    assert.equal(families.get('shoal_sink_oldest_in_flight_seconds')?.type, 'gauge')
  })

  it('a deliverer’s sink that holds a request shows it in flight and growing older, then none once answered', async () => {
    const held: ServerResponse[] = []
    const server = createServer((request, response) => {
      request.resume()
      held.push(response)
    })
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    const { port } = server.address() as AddressInfo
    const deliverer = new Deliverer()
    deliverers.push(deliverer)
    const metrics = dispatcherMetrics()
    metrics.trackOrigins(deliverer)
    const sink = { sink: `http://127.0.0.1:${port}` }
    try {
      const outcome = deliverer.deliver(event('held'), target(`http://127.0.0.1:${port}/`))
      await eventually(() => held.length === 1, 10_000, 'the sink to hold the request')
      const oldest = await eventually(
        async () => {
          const families = parseExposition(await metrics.metrics())
          const seconds = valueOf(families, 'shoal_sink_oldest_in_flight_seconds', sink) ?? 0
          return seconds > 0 && valueOf(families, 'shoal_sink_origin_in_flight', sink) === 1 && seconds
        },
        10_000,
        'the held request in the metrics'
      )
      await eventually(
        async () =>
          (valueOf(parseExposition(await metrics.metrics()), 'shoal_sink_oldest_in_flight_seconds', sink) ?? 0) >
          oldest,
        10_000,
        'the held request to grow older'
      )
      held[0]?.writeHead(202).end()
      assert.equal((await outcome).kind, 'delivered')
      const families = parseExposition(await metrics.metrics())
      assert.equal(valueOf(families, 'shoal_sink_oldest_in_flight_seconds', sink), 0)
      assert.equal(valueOf(families, 'shoal_sink_origin_in_flight', sink), 0)
      assert.equal(valueOf(families, 'shoal_sink_requests_resent_total', sink), 0)
    } finally {
      server.closeAllConnections()
      server.close()
    }
  })

  it('a sink not listening for a moment (a restart) shows the requests sent again', async () => {
    const server = createServer((request, response) => {
      request.resume()
      request.on('end', () => response.writeHead(202).end())
    })
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    const { port } = server.address() as AddressInfo
    server.close()
    await once(server, 'close')
    const deliverer = new Deliverer()
    deliverers.push(deliverer)
    const metrics = dispatcherMetrics()
    metrics.trackOrigins(deliverer)
    const sink = { sink: `http://127.0.0.1:${port}` }
    const sent = deliverer.deliver(event('restart'), target(`http://127.0.0.1:${port}/`))
    // Listening again once the first connect was refused and the request waits to be sent again.
    await eventually(() => (deliverer.sinks()[0]?.connectFailures ?? 0) >= 1, 10_000, 'a refused connect')
    server.listen(port, '127.0.0.1')
    await once(server, 'listening')
    try {
      assert.equal((await sent).kind, 'delivered')
      const families = parseExposition(await metrics.metrics())
      assert.ok((valueOf(families, 'shoal_sink_requests_resent_total', sink) ?? 0) >= 1)
      assert.deepEqual(
        samplesOf(families, 'shoal_sink_origin_in_flight').map(s => [s.labels['sink'], s.value]),
        [[sink.sink, 0]]
      )
    } finally {
      server.closeAllConnections()
      server.close()
    }
  })
})
