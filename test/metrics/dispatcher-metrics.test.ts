import assert from 'node:assert/strict'
import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { describe, it } from 'node:test'
import { Producer } from '@platformatic/kafka'
import { DEFAULT_SERVICE_URL_TEMPLATE } from '../../src/api/index.ts'
import { startDataPlane } from '../../src/dispatcher/index.ts'
import { ensureTopics } from '../../src/kafka/index.ts'
import { DispatcherMetrics, startMetricsServer } from '../../src/metrics/index.ts'
import { startControllerProcess } from '../helpers/controllers.ts'
import { http } from '../helpers/http.ts'
import { brokers, uniqueName } from '../helpers/kafka.ts'
import { eventually } from '../helpers/wait.ts'
import { testDispatcher } from '../dispatcher/helpers.ts'
import { parseExposition, samplesOf, valueOf } from './prom-text.ts'

const KS = '/apis/sources.knative.dev/v1beta1/namespaces/default/kafkasources'

describe('a dispatcher’s /metrics against the real broker', () => {
  it('counts records consumed, attempts by status class and dead-lettered events as a real sink answers', async () => {
    const prefix = uniqueName('metrics')
    const topic = `${prefix}-topic`
    await ensureTopics({ brokers: brokers(), clientId: prefix }, [{ name: topic, partitions: 1, configs: {} }])
    // One loopback sink: /ok takes every event, /bad refuses every one, /dls is the dead letter sink.
    const sink = createServer((req, res) => {
      req.resume()
      req.on('end', () => res.writeHead(req.url === '/bad' ? 400 : 202).end())
    })
    sink.listen(0, '127.0.0.1')
    await once(sink, 'listening')
    const sinkUrl = `http://127.0.0.1:${(sink.address() as AddressInfo).port}`
    const controller = await startControllerProcess(prefix)
    const dispatcher = await testDispatcher(prefix, 'dispatcher-0', { capacity: 10 })
    const metrics = new DispatcherMetrics({ dispatcher, capacity: { consumer: 10, schedule: 1000 } })
    const plane = await startDataPlane(
      dispatcher,
      { brokers: brokers(), prefix },
      {
        serviceUrlTemplate: DEFAULT_SERVICE_URL_TEMPLATE,
        observer: metrics.observer,
        log: () => undefined
      }
    )
    metrics.track(plane)
    const server = await startMetricsServer({
      metrics,
      port: 0,
      host: '127.0.0.1',
      health: () => metrics.health()
    })
    const scrape = async () => {
      const response = await fetch(`${server.url}/metrics`)
      assert.equal(response.status, 200)
      return parseExposition(await response.text())
    }
    try {
      for (const [name, delivery] of [
        ['good', `sink: {uri: "${sinkUrl}/ok"}`],
        ['refused', `sink: {uri: "${sinkUrl}/bad"}\n  delivery: {deadLetterSink: {uri: "${sinkUrl}/dls"}}`]
      ]) {
        const created = await http(
          'POST',
          `${controller.url}${KS}`,
          `apiVersion: sources.knative.dev/v1beta1\nkind: KafkaSource\nmetadata: {name: ${name}}\nspec:\n  bootstrapServers: [${brokers().join(',')}]\n  topics: [${topic}]\n  consumers: 1\n  initialOffset: earliest\n  ${delivery}\n`
        )
        assert.equal(created.status, 201, JSON.stringify(created.body))
      }
      // Both placed here and running: the contract fills two consumer slots, each source shows its in-flight gauge.
      await eventually(
        async () => {
          const m = await scrape()
          return valueOf(m, 'shoal_dispatcher_used', { slot: 'consumer' }) === 2 &&
            samplesOf(m, 'shoal_source_in_flight').length === 2
            ? true
            : undefined
        },
        60_000,
        'both sources running on the dispatcher'
      )

      const producer = new Producer({ clientId: prefix, bootstrapBrokers: brokers(), idempotent: true })
      await producer.send({
        acks: -1,
        messages: [1, 2, 3].map(n => ({ topic, key: Buffer.from(`k${n}`), value: Buffer.from(`v${n}`) }))
      })
      await producer.close()

      const good = { source: 'default/good', kind: 'KafkaSource', dispatcher: 'dispatcher-0' }
      const refused = { source: 'default/refused', kind: 'KafkaSource', dispatcher: 'dispatcher-0' }
      const m = await eventually(
        async () => {
          const m = await scrape()
          return valueOf(m, 'shoal_source_records_consumed_total', good) === 3 &&
            valueOf(m, 'shoal_source_records_consumed_total', refused) === 3
            ? m
            : undefined
        },
        60_000,
        'three records handled by each source'
      )
      const attempts = (labels: object, endpoint: string, status_class: string) =>
        valueOf(m, 'shoal_source_events_delivered_total', { ...labels, endpoint, status_class })
      assert.equal(attempts(good, 'sink', '2xx'), 3)
      assert.equal(attempts(refused, 'sink', '4xx'), 3, '400 is not retried')
      assert.equal(attempts(refused, 'dead-letter', '2xx'), 3)
      assert.equal(valueOf(m, 'shoal_source_events_dead_lettered_total', refused), 3)
      assert.equal(valueOf(m, 'shoal_source_events_dead_lettered_total', good), undefined)
      assert.equal(valueOf(m, 'shoal_source_delivery_retries_total', refused), undefined)
      assert.equal(valueOf(m, 'shoal_source_delivery_duration_seconds_count', good), 3)
      assert.equal(valueOf(m, 'shoal_source_delivery_duration_seconds_bucket', { ...good, le: '+Inf' }), 3)
      assert.ok(valueOf(m, 'shoal_source_delivery_duration_seconds_sum', good)! > 0)
      assert.equal(valueOf(m, 'shoal_source_in_flight', good), 0)
      assert.equal(valueOf(m, 'shoal_dispatcher_capacity', { slot: 'consumer' }), 10)
      assert.equal(valueOf(m, 'shoal_dispatcher_fenced'), 0)
      assert.equal(valueOf(m, 'shoal_dispatcher_contract_offset'), Number(dispatcher.contractOffset))
      assert.ok(valueOf(m, 'shoal_dispatcher_contract_offset')! >= 0)
      assert.equal(valueOf(m, 'shoal_dispatcher_sources', { labelled: 'true' }), 2)
      assert.equal(m.get('shoal_source_events_delivered_total')?.type, 'counter')

      // Every record handled: the lag of each owned partition comes down to 0 (last stable offset = committable).
      await eventually(
        async () => {
          const m = await scrape()
          const partitions = samplesOf(m, 'shoal_source_partition_lag').filter(s => s.labels['source'] === good.source)
          return valueOf(m, 'shoal_source_owned_lag', good) === 0 &&
            // One name, one meaning: the group's lag is the controller's, under its own name.
            samplesOf(m, 'shoal_source_lag').length === 0 &&
            partitions.length > 0 &&
            partitions.every(s => s.labels['topic'] === topic && s.value === 0)
            ? true
            : undefined
        },
        60_000,
        'the good source shows lag 0 on every partition it owns'
      )

      const health = await fetch(`${server.url}/healthz`)
      assert.equal(health.status, 200)
      assert.deepEqual(await health.json(), { ok: true, status: 'running' })
    } finally {
      await plane.close()
      await dispatcher.close()
      await server.close()
      await controller.stop()
      sink.close()
    }
  })
})
