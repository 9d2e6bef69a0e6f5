import assert from 'node:assert/strict'
import { once } from 'node:events'
import { createServer } from 'node:http'
import type { IncomingHttpHeaders, Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { Producer } from '@platformatic/kafka'
import { ensureTopics } from '../../src/kafka/index.ts'
import { startControllerProcess } from '../helpers/controllers.ts'
import type { ControllerProcess } from '../helpers/controllers.ts'
import { http } from '../helpers/http.ts'
import { brokers, uniqueName } from '../helpers/kafka.ts'
import { eventually } from '../helpers/wait.ts'
import { startDispatcherProcess } from '../helpers/dispatchers.ts'
import type { DispatcherProcess } from '../helpers/dispatchers.ts'

const KS = '/apis/sources.knative.dev/v1beta1/namespaces/default/kafkasources'

interface Hit {
  readonly headers: IncomingHttpHeaders
  readonly body: Buffer
  readonly status: number
}

/** A real sink whose answer per request is decided by `answer` (status code). */
async function sink(
  answer: (headers: IncomingHttpHeaders, body: Buffer) => number
): Promise<{ url: string; hits: Hit[]; server: Server }> {
  const hits: Hit[] = []
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', c => chunks.push(c))
    req.on('end', () => {
      const body = Buffer.concat(chunks)
      const status = answer(req.headers, body)
      hits.push({ headers: req.headers, body, status })
      res.writeHead(status).end(status >= 400 ? `refused with ${status}` : '')
    })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, hits, server }
}

describe('KafkaSource delivery through the whole system', () => {
  const prefix = uniqueName('delivery')
  const topic = `${prefix}-topic`
  let controller: ControllerProcess
  let dispatcher: DispatcherProcess
  const servers: Server[] = []
  let producer: Producer

  before(async () => {
    await ensureTopics({ brokers: brokers(), clientId: 'delivery' }, [{ name: topic, partitions: 3, configs: {} }])
    controller = await startControllerProcess(prefix)
    dispatcher = await startDispatcherProcess(prefix, 'dispatcher-0', 'a', 'a-1', 10)
    producer = new Producer({ clientId: 'delivery', bootstrapBrokers: brokers(), idempotent: true })
  })
  after(async () => {
    await producer?.close()
    await controller?.stop()
    await dispatcher?.stop()
    for (const s of servers) s.close()
  })

  async function source(name: string, sinkUrl: string, extra: string, topicName = topic): Promise<void> {
    const created = await http(
      'POST',
      `${controller.url}${KS}`,
      `apiVersion: sources.knative.dev/v1beta1\nkind: KafkaSource\nmetadata: {name: ${name}}\nspec:\n  bootstrapServers: [${brokers().join(',')}]\n  topics: [${topicName}]\n  initialOffset: earliest\n  sink: {uri: "${sinkUrl}"}\n${extra}`
    )
    assert.equal(created.status, 201, JSON.stringify(created.body))
  }

  it('retries 503 with backoff until 200, sends 400 to the dead letter sink at once, and dead-letters an unreachable sink', async () => {
    const flakyCount = new Map<string, number>()
    const main = await sink(headers => {
      const key = String(headers['ce-key'])
      if (key === 'bad') return 400
      if (key === 'flaky') {
        const n = (flakyCount.get(key) ?? 0) + 1
        flakyCount.set(key, n)
        return n <= 2 ? 503 : 200
      }
      return 200
    })
    const dls = await sink(() => 202)
    servers.push(main.server, dls.server)
    await source(
      'retries',
      main.url,
      `  delivery:\n    retry: 3\n    backoffPolicy: exponential\n    backoffDelay: PT0.05S\n    deadLetterSink: {uri: "${dls.url}"}\n`
    )
    await producer.send({
      acks: -1,
      messages: ['flaky', 'bad'].map(key => ({
        topic,
        partition: 0,
        key: Buffer.from(key),
        value: Buffer.from(`value of ${key}`)
      }))
    })
    await eventually(
      async () =>
        main.hits.some(h => h.headers['ce-key'] === 'flaky' && h.status === 200) && dls.hits.length >= 1
          ? true
          : undefined,
      60_000,
      'flaky delivered and bad dead-lettered'
    )
    const flaky = main.hits.filter(h => h.headers['ce-key'] === 'flaky').map(h => h.status)
    assert.deepEqual(flaky, [503, 503, 200])
    const bad = main.hits.filter(h => h.headers['ce-key'] === 'bad')
    assert.equal(bad.length, 1, 'a 400 is not retried')
    const dead = dls.hits.find(h => h.headers['ce-key'] === 'bad')!
    assert.equal(dead.headers['ce-knativeerrorcode'], '400')
    assert.equal(dead.headers['ce-knativeerrordest'], main.url)
    assert.deepEqual(dead.body, Buffer.from('value of bad'))

    // A sink nobody listens on: retried, then dead-lettered.
    const gone = await sink(() => 200)
    const goneUrl = gone.url
    gone.server.close()
    const unreachableTopic = `${topic}-unreachable`
    await ensureTopics({ brokers: brokers(), clientId: 'delivery' }, [
      { name: unreachableTopic, partitions: 1, configs: {} }
    ])
    await source(
      'unreachable',
      goneUrl,
      `  delivery:\n    retry: 2\n    backoffDelay: PT0.05S\n    deadLetterSink: {uri: "${dls.url}"}\n`,
      unreachableTopic
    )
    await producer.send({
      acks: -1,
      messages: [{ topic: unreachableTopic, partition: 0, key: Buffer.from('lost-sink'), value: Buffer.from('x') }]
    })
    const deadToo = await eventually(
      async () => dls.hits.find(h => h.headers['ce-key'] === 'lost-sink'),
      60_000,
      'dead-lettered after retries'
    )
    assert.equal(deadToo.headers['ce-knativeerrordest'], goneUrl)
  })

  it('sends the event as Knative does: the key-type label, knativekafkapartition/offset on every mode, ceOverrides last', async () => {
    const eventTopic = `${topic}-event`
    await ensureTopics({ brokers: brokers(), clientId: 'delivery' }, [{ name: eventTopic, partitions: 2, configs: {} }])
    const main = await sink(() => 200)
    servers.push(main.server)
    const created = await http(
      'POST',
      `${controller.url}${KS}`,
      [
        'apiVersion: sources.knative.dev/v1beta1',
        'kind: KafkaSource',
        'metadata:',
        '  name: knative-event',
        '  labels: {kafkasources.sources.knative.dev/key-type: int}',
        'spec:',
        `  bootstrapServers: [${brokers().join(',')}]`,
        `  topics: [${eventTopic}]`,
        '  initialOffset: earliest',
        `  sink: {uri: "${main.url}"}`,
        '  ceOverrides: {extensions: {team: blue, knativekafkapartition: overridden}}',
        ''
      ].join('\n')
    )
    assert.equal(created.status, 201, JSON.stringify(created.body))
    const bufferHeaders = (headers: Record<string, string>) =>
      new Map(Object.entries(headers).map(([name, value]) => [Buffer.from(name), Buffer.from(value)]))
    const int32 = (n: number) => {
      const b = Buffer.alloc(4)
      b.writeInt32BE(n)
      return b
    }
    await producer.send({
      acks: -1,
      messages: [
        { topic: eventTopic, partition: 1, key: int32(-7), value: Buffer.from('plain') },
        { topic: eventTopic, partition: 1, key: Buffer.from('abc'), value: Buffer.from('short key') },
        {
          topic: eventTopic,
          partition: 1,
          key: int32(9),
          value: Buffer.from('binary'),
          headers: bufferHeaders({
            ce_specversion: '1.0',
            ce_id: 'b-1',
            ce_source: '/upstream',
            ce_type: 'com.example.binary'
          })
        },
        {
          topic: eventTopic,
          partition: 1,
          value: Buffer.from(JSON.stringify({ specversion: '1.0', id: 's-1', source: '/up', type: 'com.example.s' })),
          headers: bufferHeaders({ 'content-type': 'application/cloudevents+json' })
        }
      ]
    })
    const hits = await eventually(async () => (main.hits.length >= 4 ? main.hits : undefined), 60_000, '4 events')
    const byBody = (body: string) => hits.find(hit => hit.body.toString() === body)!
    const plain = byBody('plain')
    assert.equal(plain.headers['ce-key'], '-7')
    assert.equal(plain.headers['ce-partitionkey'], '-7')
    assert.equal(byBody('short key').headers['ce-key'], 'abc', 'a key not 4 bytes long is read as a string')
    for (const hit of hits) {
      // ceOverrides come last, over the Kafka extension; the offset is the record's.
      assert.equal(hit.headers['ce-knativekafkapartition'], 'overridden')
      assert.equal(hit.headers['ce-team'], 'blue')
      assert.match(String(hit.headers['ce-knativekafkaoffset']), /^[0-3]$/)
    }
    assert.equal(plain.headers['ce-knativekafkaoffset'], String(plain.headers['ce-subject']).split('#')[1])
    const binary = hits.find(hit => hit.headers['ce-id'] === 'b-1')!
    assert.equal(binary.headers['ce-key'], undefined, 'a CloudEvent record keeps its own extensions')
    assert.ok(hits.some(hit => hit.headers['ce-id'] === 's-1'))
    assert.deepEqual(hits.map(hit => hit.headers['ce-knativekafkaoffset']).sort(), ['0', '1', '2', '3'])
  })

  it('keeps per-partition order at the sink in ordered mode, through retries', async () => {
    const orderedTopic = `${topic}-ordered`
    await ensureTopics({ brokers: brokers(), clientId: 'delivery' }, [
      { name: orderedTopic, partitions: 3, configs: {} }
    ])
    let requests = 0
    const main = await sink(() => (++requests % 4 === 0 ? 503 : 200))
    servers.push(main.server)
    await source(
      'in-order',
      main.url,
      `  ordering: ordered\n  delivery:\n    retry: 5\n    backoffDelay: PT0.02S\n`,
      orderedTopic
    )
    const count = 300
    await producer.send({
      acks: -1,
      messages: Array.from({ length: count }, (_, i) => ({
        topic: orderedTopic,
        partition: i % 3,
        key: Buffer.from(`k${i}`),
        value: Buffer.from(`${i}`)
      }))
    })
    await eventually(
      async () => (main.hits.filter(h => h.status === 200).length >= count ? true : undefined),
      60_000,
      'all delivered'
    )
    assert.ok(
      main.hits.some(h => h.status === 503),
      'some deliveries were retried'
    )
    for (let partition = 0; partition < 3; partition++) {
      const delivered = main.hits
        .filter(h => h.status === 200 && String(h.headers['ce-subject']).startsWith(`partition:${partition}#`))
        .map(h => Number(String(h.headers['ce-subject']).split('#')[1]))
      const sorted = [...delivered].sort((a, b) => a - b)
      assert.deepEqual(delivered, sorted, `partition ${partition} out of order`)
    }
  })
})
