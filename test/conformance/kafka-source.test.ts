// Knative's KafkaSource end-to-end assertions, each stated as Knative states it, against one `shoal controller` and
// one `shoal dispatcher` process, records produced by confluent-kafka and events received by the CloudEvents Python
// SDK (over https too, with Python's own TLS). docs/conformance.md has the table.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { startControllerProcess } from '../helpers/controllers.ts'
import type { ControllerProcess } from '../helpers/controllers.ts'
import { startDispatcherProcess } from '../helpers/dispatchers.ts'
import type { DispatcherProcess } from '../helpers/dispatchers.ts'
import { http } from '../helpers/http.ts'
import { brokers, createTopic, uniqueName } from '../helpers/kafka.ts'
import { eventually } from '../helpers/wait.ts'
import { committedOffsets, describeGroup, endOffsets } from '../kafka-source/helpers.ts'
import { certificates, isReady, producePython, statusOf, tracingSink } from './helpers.ts'
import type { Arrived, ProducedRecord, TracingSink } from './helpers.ts'

const KS = '/apis/sources.knative.dev/v1/namespaces/default/kafkasources'
const FEATURES = 'eventing-kafka-broker test/rekt/features/kafka_source.go'
const E2E_SOURCE = 'eventing-kafka-broker test/e2e_source/helpers/kafka_source.go'
const KEY_DESERIALIZER = 'eventing-kafka-broker data-plane/dispatcher/.../impl/consumer/KeyDeserializerTest.java'

interface Source {
  readonly name: string
  readonly topic: string
  readonly group: string
  readonly url: string
}

describe('Knative KafkaSource conformance', () => {
  let controller: ControllerProcess
  let dispatcher: DispatcherProcess
  let sink: TracingSink
  let prefix: string

  before(async () => {
    prefix = uniqueName('conf-ks')
    sink = await tracingSink()
    controller = await startControllerProcess(prefix)
    dispatcher = await startDispatcherProcess(prefix, 'dispatcher-0', 'a', 'a-1', 20)
  })
  after(async () => {
    await controller?.stop()
    await dispatcher?.stop()
    await sink?.stop()
  })

  function manifest(
    name: string,
    topic: string,
    group: string,
    sinkUri: string,
    extra = '',
    labels?: Readonly<Record<string, string>>
  ): string {
    const metadata = labels === undefined ? `{name: ${name}}` : `{name: ${name}, labels: ${JSON.stringify(labels)}}`
    return (
      `apiVersion: sources.knative.dev/v1\nkind: KafkaSource\nmetadata: ${metadata}\nspec:\n` +
      `  bootstrapServers: [${brokers().join(',')}]\n  topics: [${topic}]\n  consumerGroup: ${group}\n` +
      `  sink: {uri: "${sinkUri}"}\n${extra}`
    )
  }

  /** Creates a topic and a KafkaSource on it (at `latest` unless `extra` says otherwise) and waits until Ready. */
  async function source(
    label: string,
    extra = '',
    options: {
      partitions?: number
      sinkUri?: string
      labels?: Readonly<Record<string, string>>
      before?: (topic: string) => Promise<unknown>
    } = {}
  ): Promise<Source> {
    const name = uniqueName(label)
      .toLowerCase()
      .replace(/[^a-z0-9-]/g, '-')
      .slice(0, 60)
      .replace(/-+$/, '')
    const topic = `${prefix}-${label}`
    const group = `${topic}-group`
    await createTopic(topic, { partitions: options.partitions ?? 1 })
    await options.before?.(topic)
    const created = await http(
      'POST',
      `${controller.url}${KS}`,
      manifest(name, topic, group, options.sinkUri ?? sink.url, extra, options.labels)
    )
    assert.equal(created.status, 201, JSON.stringify(created.body))
    const url = `${controller.url}${KS}/${name}`
    await eventually(async () => isReady(await statusOf(url)), 60_000, `KafkaSource ${name} Ready`)
    // Ready once placed; the consumer joins its group just after: records written before it has a position at
    // `latest` would be skipped, as Knative's would. Wait for the group to own the partitions.
    await eventually(
      async () => [...(await describeGroup(group, topic)).members.values()].flat().length === (options.partitions ?? 1),
      60_000,
      `group ${group} owning ${topic}`
    )
    return { name, topic, group, url }
  }

  const withId = (id: string) => (e: Arrived) => e['id'] === id
  const arrivals = (match: (e: Arrived) => boolean) => sink.arrived.filter(match)
  async function one(match: (e: Arrived) => boolean, what: string): Promise<Arrived> {
    return eventually(() => arrivals(match)[0], 30_000, what)
  }

  /** A CloudEvent in Kafka's binary content mode (`ce_` headers), as a KafkaSink writes one. */
  function binaryRecord(id: string, extensions: Record<string, string> = {}): ProducedRecord {
    const ext = Object.fromEntries(Object.entries(extensions).map(([k, v]) => [`ce_${k}`, v]))
    return {
      value: '{"hello":"Francesco"}',
      headers: {
        ce_specversion: '1.0',
        ce_type: 'com.github.pull.create',
        ce_source: 'github.com/cloudevents/spec/pull',
        ce_subject: '123',
        ce_id: id,
        'content-type': 'application/json',
        ...ext
      }
    }
  }

  /** A CloudEvent in structured content mode. */
  function structuredRecord(id: string, extensions: Record<string, unknown> = {}, full = true): ProducedRecord {
    const event = full
      ? {
          specversion: '1.0',
          type: 'com.github.pull.create',
          source: 'https://github.com/cloudevents/spec/pull',
          subject: '123',
          id,
          time: '2018-04-05T17:31:00Z',
          datacontenttype: 'application/json',
          data: { hello: 'Francesco' },
          ...extensions
        }
      : { specversion: '1.0', type: 'com.github.pull.create', source: 'https://github.com/cloudevents/spec/pull', id }
    return { value: JSON.stringify(event), headers: { 'content-type': 'application/cloudevents+json' } }
  }

  const OVERRIDES = '  ceOverrides: {extensions: {comexampleextension1: value, comexampleothervalue: "5"}}\n'

  it(`KafkaSourceBinaryEvent: "eventshub receiver gets event" — every attribute, data and extension of a binary-mode event (${FEATURES})`, async () => {
    const s = await source('binary')
    const id = uniqueName('id')
    await producePython(s.topic, [binaryRecord(id, { comexampleextension1: 'value', comexampleothervalue: '5' })])
    const e = await one(withId(id), `event ${id}`)
    assert.equal(e['specversion'], '1.0')
    assert.equal(e['type'], 'com.github.pull.create')
    assert.equal(e['source'], 'github.com/cloudevents/spec/pull')
    assert.equal(e['subject'], '123')
    assert.equal(e['datacontenttype'], 'application/json')
    assert.equal(e._data, '{"hello":"Francesco"}')
    assert.equal(e['comexampleextension1'], 'value')
    assert.equal(e['comexampleothervalue'], '5')
  })

  it(`KafkaSourceBinaryEventWithExtensions: "eventshub receiver gets event" — spec.ceOverrides extensions on a binary-mode event (${FEATURES})`, async () => {
    const s = await source('binary-ext', OVERRIDES)
    const id = uniqueName('id')
    await producePython(s.topic, [binaryRecord(id)])
    const e = await one(withId(id), `event ${id}`)
    assert.equal(e['type'], 'com.github.pull.create')
    assert.equal(e['source'], 'github.com/cloudevents/spec/pull')
    assert.equal(e['subject'], '123')
    assert.equal(e['datacontenttype'], 'application/json')
    assert.equal(e['comexampleextension1'], 'value')
    assert.equal(e['comexampleothervalue'], '5')
  })

  it(`KafkaSourceStructuredEvent: "eventshub receiver gets event" — every attribute, time, data and extension of a structured-mode event (${FEATURES})`, async () => {
    const s = await source('structured')
    const id = uniqueName('id')
    await producePython(s.topic, [structuredRecord(id, { comexampleextension1: 'value', comexampleothervalue: 5 })])
    const e = await one(withId(id), `event ${id}`)
    assert.equal(e['specversion'], '1.0')
    assert.equal(e['type'], 'com.github.pull.create')
    assert.equal(e['source'], 'https://github.com/cloudevents/spec/pull')
    assert.equal(e['subject'], '123')
    assert.equal(Date.parse(String(e['time'])), Date.parse('2018-04-05T17:31:00Z'))
    assert.equal(e['datacontenttype'], 'application/json')
    assert.equal(e._data, '{"hello":"Francesco"}')
    assert.equal(e['comexampleextension1'], 'value')
    assert.equal(e['comexampleothervalue'], '5')
  })

  it(`KafkaSourceWithExtensions: "eventshub receiver gets event" — spec.ceOverrides extensions on a structured-mode event (${FEATURES})`, async () => {
    const s = await source('structured-ext', OVERRIDES)
    const id = uniqueName('id')
    await producePython(s.topic, [structuredRecord(id, {}, false)])
    const e = await one(withId(id), `event ${id}`)
    assert.equal(e['type'], 'com.github.pull.create')
    assert.equal(e['source'], 'https://github.com/cloudevents/spec/pull')
    assert.equal(e['comexampleextension1'], 'value')
    assert.equal(e['comexampleothervalue'], '5')
  })

  // AssureKafkaSourceConsumesMsgNoEvent: records that are not CloudEvents, each case AssertExact(messageCount)
  // with Knative's source and type, then the group's committed lag (0, or 1 after a transaction) — here one topic
  // of 10 partitions per case, as Knative makes them.
  const plainCases: Array<{
    name: string
    key?: string
    headers?: Record<string, string>
    value: string
    type?: string
  }> = [
    {
      name: 'no_event',
      key: '0',
      headers: { 'content-type': 'application/json' },
      value: '{"value":5}',
      type: 'application/json'
    },
    { name: 'no_event_no_content_type', key: '0', value: '{"value":5}' },
    { name: 'no_event_content_type_or_key', value: '{"value":5}' },
    {
      name: 'no_event_with_text_plain_body',
      key: '0',
      headers: { 'content-type': 'text/plain' },
      value: 'simple 10',
      type: 'text/plain'
    }
  ]
  for (const c of plainCases) {
    it(`AssureKafkaSourceConsumesMsgNoEvent/${c.name}: "AssertExact(1)" on type, source, data${c.type ? ', datacontenttype' : ''}${c.key ? ', key' : ''}, with subject, id and knativekafkapartition/offset; committed lag 0 (${E2E_SOURCE})`, async () => {
      const s = await source(c.name.replaceAll('_', '-'), '', { partitions: 10 })
      const record: ProducedRecord = {
        value: c.value,
        ...(c.key === undefined ? {} : { key: c.key }),
        ...(c.headers ? { headers: c.headers } : {})
      }
      const [[partition, offset]] = (await producePython(s.topic, [record])) as [[number, number]]
      const mine = (e: Arrived) => e['source'] === `/apis/v1/namespaces/default/kafkasources/${s.name}#${s.topic}`
      const e = await one(mine, `the record's event from ${s.name}`)
      assert.equal(e['type'], 'dev.knative.kafka.event')
      assert.equal(e._data, c.value)
      if (c.type) assert.equal(e['datacontenttype'], c.type)
      if (c.key) assert.equal(e['key'], c.key)
      else assert.equal(e['key'], undefined)
      assert.equal(e['id'], `partition:${partition}/offset:${offset}`)
      assert.equal(e['subject'], `partition:${partition}#${offset}`)
      assert.equal(e['knativekafkapartition'], String(partition))
      assert.equal(e['knativekafkaoffset'], String(offset))
      // The group's lag reaches 0: the record is committed, so no further delivery is due.
      await eventually(
        async () => (await committedOffsets(s.group, s.topic, 10))[partition] === BigInt(offset) + 1n,
        30_000,
        'committed lag 0'
      )
      assert.equal(arrivals(mine).length, 1, 'exactly one event')
    })
  }

  it(`AssureKafkaSourceConsumesMsgNoEvent/no_event_with_transactional_id: "AssertExact(10)" from a transactional producer; an aborted transaction is never delivered (${E2E_SOURCE})`, async () => {
    const s = await source('transactional', '', { partitions: 10 })
    const record: ProducedRecord = { key: '0', value: '{"value":5}', headers: { 'content-type': 'application/json' } }
    const aborted: ProducedRecord = {
      key: '0',
      value: '{"aborted":true}',
      headers: { 'content-type': 'application/json' }
    }
    const offsets = await producePython(s.topic, Array(10).fill(record), {
      transactionalId: `${s.topic}-tx`,
      aborted: Array(5).fill(aborted)
    })
    const partition = offsets[0]![0]
    // The partition now ends with a transaction marker (the abort's): where Knative's test takes the lag and expects 1,
    // its consumer committing up to the marker, not past it. Shoal commits past the markers, to the partition's end:
    // the 10 records, the commit marker, the 5 aborted records and the abort marker (written just after the abort).
    const pastMarkers = BigInt(offsets[9]![1]) + 8n
    await eventually(
      async () => (await endOffsets(s.topic, 10))[partition] === pastMarkers,
      30_000,
      'both markers written'
    )
    await eventually(
      async () => (await committedOffsets(s.group, s.topic, 10))[partition] === pastMarkers,
      30_000,
      'committed lag 0: past the abort marker'
    )
    // A control record after the aborted transaction proves the source read past it before the count is taken.
    await producePython(s.topic, [{ key: '0', value: 'control' }])
    const mine = (e: Arrived) => e['source'] === `/apis/v1/namespaces/default/kafkasources/${s.name}#${s.topic}`
    await one(e => mine(e) && e._data === 'control', 'the control record after the aborted transaction')
    const events = arrivals(mine).filter(e => e._data !== 'control')
    assert.equal(events.length, 10, 'exactly the 10 committed records')
    for (const e of events) {
      assert.equal(e['type'], 'dev.knative.kafka.event')
      assert.equal(e['datacontenttype'], 'application/json')
      assert.equal(e._data, '{"value":5}')
      assert.equal(e['key'], '0')
    }
  })

  it(`KeyDeserializer int: with the label kafkasources.sources.knative.dev/key-type: int, the 4-byte big-endian key 00 00 00 2a arrives as key 42 (${KEY_DESERIALIZER}; issue 23's check)`, async () => {
    const s = await source('key-int', '', { labels: { 'kafkasources.sources.knative.dev/key-type': 'int' } })
    const key = Buffer.from([0x00, 0x00, 0x00, 0x2a]).toString('base64')
    const [[partition, offset]] = (await producePython(s.topic, [{ keyBase64: key, value: 'int key' }])) as [
      [number, number]
    ]
    const e = await one(
      e =>
        e['source'] === `/apis/v1/namespaces/default/kafkasources/${s.name}#${s.topic}` &&
        e['id'] === `partition:${partition}/offset:${offset}`,
      "the int-keyed record's event"
    )
    assert.equal(e._data, 'int key')
    assert.equal(e['key'], '42')
    assert.equal(e['partitionkey'], '42')
  })

  it(`KafkaSourceInitialOffsetEarliest: "received event with sequence N" for each record written before the source (${FEATURES})`, async () => {
    const count = 5
    const ids = Array.from({ length: count }, () => uniqueName('early'))
    const s = await source('earliest', '  initialOffset: earliest\n', {
      before: topic =>
        producePython(
          topic,
          ids.map((id, i) => binaryRecord(id, { sequence: String(i + 1) }))
        )
    })
    for (let i = 1; i <= count; i++) {
      const e = await one(e => ids.includes(String(e['id'])) && e['sequence'] === String(i), `sequence ${i}`)
      assert.equal(e['type'], 'com.github.pull.create')
    }
    assert.equal(arrivals(e => ids.includes(String(e['id']))).length, count)
    assert.equal((await statusOf(s.url))['initialOffset'] ?? 'earliest', 'earliest')
  })

  it(`ScaleKafkaSource: "kafkasource is scaled" — spec.consumers 3 shows as 3 consumers in status and 3 group members (${FEATURES})`, async () => {
    const s = await source('scaled', '  consumers: 3\n', { partitions: 3 })
    const status = await eventually(
      async () => {
        const st = await statusOf(s.url)
        return st['consumers'] === 3 ? st : undefined
      },
      30_000,
      'status.consumers 3'
    )
    const placed = (status['placements'] as Array<{ vreplicas: number }>).reduce((n, p) => n + p.vreplicas, 0)
    assert.equal(placed, 3)
    await eventually(
      async () => (await describeGroup(s.group, s.topic)).members.size === 3,
      30_000,
      '3 members in the group'
    )
  })

  it(`KafkaSourceTLSSink: "delivers events on sink with ref", "Set sinkURI to HTTPS endpoint", "Set sinkCACerts to non empty CA certs" — the Python SDK sink over https, its CA in sink.CACerts (${FEATURES})`, async () => {
    const tls = certificates()
    const secure = await tracingSink([], tls)
    try {
      const ca = tls.ca
        .trim()
        .split('\n')
        .map(l => `      ${l}`)
        .join('\n')
      // The CA goes in spec.sink.CACerts, a block of its own, so this source is written out in full.
      const name = uniqueName('tls').toLowerCase().slice(0, 50)
      const topic = `${prefix}-tls`
      await createTopic(topic)
      const body =
        `apiVersion: sources.knative.dev/v1\nkind: KafkaSource\nmetadata: {name: ${name}}\nspec:\n` +
        `  bootstrapServers: [${brokers().join(',')}]\n  topics: [${topic}]\n  consumerGroup: ${topic}-group\n` +
        `  sink:\n    uri: "${secure.url}"\n    CACerts: |\n${ca}\n`
      const created = await http('POST', `${controller.url}${KS}`, body)
      assert.equal(created.status, 201, JSON.stringify(created.body))
      const url = `${controller.url}${KS}/${name}`
      const status = await eventually(
        async () => {
          const st = await statusOf(url)
          return isReady(st) ? st : undefined
        },
        60_000,
        'Ready'
      )
      await eventually(
        async () => (await describeGroup(`${topic}-group`, topic)).members.size === 1,
        60_000,
        'group joined'
      )
      const id = uniqueName('tls-id')
      await producePython(topic, [binaryRecord(id)])
      const e = await eventually(() => secure.arrived.find(withId(id)), 30_000, 'the event at the https sink')
      assert.equal(e['type'], 'com.github.pull.create')
      assert.equal(e._data, '{"hello":"Francesco"}')
      assert.equal(status['sinkUri'], secure.url)
      assert.match(String(status['sinkUri']), /^https:\/\//)
      assert.ok(String(status['sinkCACerts'] ?? '').includes('BEGIN CERTIFICATE'))
    } finally {
      await secure.stop()
    }
  })

  it(`KafkaSourceWithEventAfterUpdate: "sink receives event" — after the source is updated to a new sink (${FEATURES})`, async () => {
    const second = await tracingSink()
    try {
      const s = await source('update')
      const current = (await http('GET', s.url)).body
      const updated = await http(
        'PUT',
        s.url,
        JSON.stringify({ ...current, spec: { ...current.spec, ordering: 'unordered', sink: { uri: second.url } } }),
        'application/json'
      )
      assert.equal(updated.status, 200, JSON.stringify(updated.body))
      await eventually(
        async () => (await statusOf(s.url))['sinkUri'] === second.url,
        30_000,
        'status.sinkUri the new sink'
      )
      const id = uniqueName('after-update')
      // The change reaches the dispatcher asynchronously: resend until one arrives, then it must be at the new sink.
      await eventually(
        async () => {
          if (second.arrived.some(e => String(e['id']).startsWith(id))) return true
          await producePython(s.topic, [structuredRecord(`${id}-${Date.now()}`)])
          return false
        },
        30_000,
        'an event at the updated sink',
        1_000
      )
      const e = second.arrived.find(x => String(x['id']).startsWith(id))!
      assert.equal(e._data, '{"hello":"Francesco"}')
      assert.equal(Date.parse(String(e['time'])), Date.parse('2018-04-05T17:31:00Z'))
    } finally {
      await second.stop()
    }
  })

  it(`KafkaSourcesAreNotPresentInContractConfigMaps: "deleted KafkaSources are not present in Contract CMs" — a deleted source leaves the API and its consumer group (Shoal has no contract ConfigMap) (${FEATURES})`, async () => {
    const s = await source('deleted')
    const deleted = await http('DELETE', s.url)
    assert.ok(deleted.status === 200 || deleted.status === 202, JSON.stringify(deleted.body))
    await eventually(async () => (await http('GET', s.url)).status === 404, 30_000, 'the source gone from the API')
    await eventually(
      async () => (await describeGroup(s.group, s.topic)).members.size === 0,
      60_000,
      'no member left in its group'
    )
  })
})
