import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { validateResource } from '../../src/api/index.ts'
import { catchShoal, edit, expectInvalidPaths, kafkaSourceManifest } from './helpers.ts'

const kafka = kafkaSourceManifest

const ping = {
  apiVersion: 'sources.knative.dev/v1',
  kind: 'PingSource',
  metadata: { name: 'heartbeat', namespace: 'team-a' },
  spec: {
    schedule: '*/5 * * * *',
    data: 'hello',
    sink: { ref: { apiVersion: 'v1', kind: 'Service', name: 'display' } }
  }
}

describe('validateResource: defaults and freezing', () => {
  it('applies the KafkaSource defaults', () => {
    const source = validateResource(kafka)
    assert.ok(source.kind === 'KafkaSource')
    assert.equal(source.metadata.namespace, 'default')
    assert.equal(source.spec.consumers, 1)
    assert.equal(source.spec.initialOffset, 'latest')
    assert.equal(source.spec.ordering, 'ordered')
    assert.equal(source.spec.consumerGroup, undefined, 'the server fills consumerGroup in')
  })

  it('keeps explicit values over defaults', () => {
    const source = validateResource(
      edit(kafka, { 'spec.consumers': 0, 'spec.initialOffset': 'earliest', 'spec.ordering': 'unordered' })
    )
    assert.ok(source.kind === 'KafkaSource')
    assert.deepEqual(
      [source.spec.consumers, source.spec.initialOffset, source.spec.ordering],
      [0, 'earliest', 'unordered']
    )
  })

  it('defaults a ref namespace to the source namespace, and the PingSource schedule to every minute', () => {
    const source = validateResource(edit(ping, { 'spec.schedule': undefined }))
    assert.ok(source.kind === 'PingSource')
    assert.equal(source.spec.schedule, '* * * * *')
    assert.equal(source.spec.sink.ref?.namespace, 'team-a')
    assert.equal(source.spec.timezone, undefined)
  })

  it('splits comma-separated bootstrap servers', () => {
    const source = validateResource(edit(kafka, { 'spec.bootstrapServers': ['a:9092, b:9092', 'c:9093'] }))
    assert.ok(source.kind === 'KafkaSource')
    assert.deepEqual(source.spec.bootstrapServers, ['a:9092', 'b:9092', 'c:9093'])
  })

  it('returns a deeply frozen copy and leaves the input alone', () => {
    const input = structuredClone(kafka)
    const source = validateResource(input)
    assert.ok(source.kind === 'KafkaSource')
    assert.deepEqual(input, kafka)
    assert.notEqual(source, input)
    for (const value of [source, source.metadata, source.spec, source.spec.sink, source.spec.topics]) {
      assert.ok(Object.isFrozen(value))
    }
    assert.throws(() => {
      ;(source.spec.topics as string[]).push('x')
    }, TypeError)
  })

  it('accepts and drops what kubectl-exported manifests carry', () => {
    const exported = edit(kafka, {
      'metadata.creationTimestamp': null,
      'metadata.uid': '9f0c7a3e-1111-2222-3333-444455556666',
      'metadata.generation': 3,
      'metadata.resourceVersion': '42',
      'metadata.finalizers': ['kafkasources.sources.knative.dev'],
      'metadata.ownerReferences': [{ apiVersion: 'v1', kind: 'Namespace', name: 'x', uid: 'y' }],
      'metadata.managedFields': [{ manager: 'kubectl' }],
      'metadata.selfLink': '/apis/x',
      'metadata.annotations': { 'kubectl.kubernetes.io/last-applied-configuration': '{"a":1}\n' },
      status: { conditions: [{ type: 'Ready', status: 'True' }] }
    })
    const source = validateResource(exported)
    assert.deepEqual(Object.keys(source).sort(), ['apiVersion', 'kind', 'metadata', 'spec'])
    assert.deepEqual(Object.keys(source.metadata).sort(), [
      'annotations',
      'generation',
      'name',
      'namespace',
      'resourceVersion',
      'uid'
    ])
  })

  it('accepts a ref with a relative uri, IPv4 and IPv6 brokers, PEM CA certificates and macros', () => {
    const pem = '-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\nAbCd==\n-----END CERTIFICATE-----\n'
    validateResource(
      edit(kafka, {
        'spec.bootstrapServers': ['10.0.0.1:9092', '[::1]:9092', 'KAFKA.example.com:9093'],
        'spec.sink': {
          ref: { apiVersion: 'serving.knative.dev/v1', kind: 'Service', name: 'display', namespace: 'other' },
          uri: '/events?x=1',
          CACerts: pem
        }
      })
    )
    for (const schedule of ['@hourly', '@daily', '@midnight', '0 30 9 * * MON-FRI', '0 0 29 2 *']) {
      validateResource(edit(ping, { 'spec.schedule': schedule, 'spec.timezone': 'Europe/Paris' }))
    }
  })
})

describe('validateResource: KafkaSource maxInFlight', () => {
  it('takes a positive integer up to 100000 and names the field otherwise', () => {
    const ok = validateResource(edit(kafka, { 'spec.ordering': 'unordered', 'spec.maxInFlight': 5000 }))
    assert.equal((ok.spec as { maxInFlight?: number }).maxInFlight, 5000)
    for (const bad of [0, 1.5, 100_001, '10']) {
      const messages = expectInvalidPaths(
        () => validateResource(edit(kafka, { 'spec.maxInFlight': bad })),
        ['spec.maxInFlight']
      )
      assert.ok(messages.get('spec.maxInFlight'))
    }
  })
})

describe('validateResource: KafkaSource ordering', () => {
  it("takes Knative's ordered and unordered and Shoal's key, and names the field otherwise", () => {
    for (const ordering of ['ordered', 'unordered', 'key']) {
      const ok = validateResource(edit(kafka, { 'spec.ordering': ordering }))
      assert.ok(ok.kind === 'KafkaSource')
      assert.equal(ok.spec.ordering, ordering)
    }
    for (const bad of ['keyed', 'KEY', '']) {
      const messages = expectInvalidPaths(
        () => validateResource(edit(kafka, { 'spec.ordering': bad })),
        ['spec.ordering']
      )
      assert.equal(messages.get('spec.ordering'), 'must be one of: ordered, unordered, key')
    }
  })
})

describe('validateResource: every offending field in one error', () => {
  it('wrong types', () => {
    const messages = expectInvalidPaths(
      () =>
        validateResource(
          edit(kafka, {
            'metadata.name': 7,
            'metadata.labels': { app: 1 },
            'spec.topics': 'orders',
            'spec.consumers': 1.5,
            'spec.initialOffset': 'oldest',
            'spec.delivery': { retry: -1, backoffPolicy: 'random' },
            'spec.net': { tls: { enable: 'yes' } }
          })
        ),
      [
        'metadata.name',
        'metadata.labels.app',
        'spec.topics',
        'spec.consumers',
        'spec.initialOffset',
        'spec.delivery.retry',
        'spec.delivery.backoffPolicy',
        'spec.net.tls.enable'
      ]
    )
    assert.equal(messages.get('spec.topics'), 'must be an array')
    assert.equal(messages.get('spec.initialOffset'), 'must be one of: earliest, latest')
    assert.equal(messages.get('spec.delivery.retry'), 'must be at least 0')
  })

  it('unknown fields, at every level', () => {
    const messages = expectInvalidPaths(
      () =>
        validateResource(
          edit(kafka, {
            extra: 1,
            'metadata.generateName': 'orders-',
            'spec.topic': 'orders',
            'spec.sink.audience': 'x',
            'spec.delivery.format': 'json',
            'spec.ceOverrides.other': {}
          })
        ),
      [
        'extra',
        'metadata.generateName',
        'spec.topic',
        'spec.sink.audience',
        'spec.delivery.format',
        'spec.ceOverrides.other'
      ]
    )
    assert.equal(messages.get('spec.topic'), 'unknown field')
    assert.match(messages.get('spec.delivery.format') ?? '', /binary/)
    // Outside Kubernetes there is no TokenRequest API to get the audience's token from.
    assert.match(messages.get('spec.sink.audience') ?? '', /--kubernetes/)
  })

  it('missing required fields, the sink among them', () => {
    expectInvalidPaths(
      () => validateResource(edit(kafka, { 'metadata.name': undefined, 'spec.sink': undefined, 'spec.topics': [] })),
      ['metadata.name', 'spec.sink', 'spec.topics']
    )
    expectInvalidPaths(() => validateResource(edit(ping, { 'spec.sink': undefined })), ['spec.sink'])
    expectInvalidPaths(() => validateResource(edit(ping, { spec: undefined })), ['spec'])
    expectInvalidPaths(() => validateResource(edit(ping, { 'spec.sink': {} })), ['spec.sink'])
  })

  it('bad cron, bad timezone, both data and dataBase64', () => {
    const messages = expectInvalidPaths(
      () =>
        validateResource(
          edit(ping, { 'spec.schedule': '61 * * * *', 'spec.timezone': 'Mars/Olympus', 'spec.dataBase64': 'aGk=' })
        ),
      ['spec.schedule', 'spec.timezone', 'spec.data', 'spec.dataBase64']
    )
    assert.match(messages.get('spec.schedule') ?? '', /not a valid cron schedule/)
    assert.match(messages.get('spec.timezone') ?? '', /IANA/)
    assert.match(messages.get('spec.data') ?? '', /spec\.data and spec\.dataBase64/)
  })

  for (const [schedule, why] of [
    ['* * * *', /4 fields/],
    ['0 0 0 * * * *', /7 fields/],
    ['@every 5m', /@every/],
    ['@sometimes', /descriptor/],
    ['CRON_TZ=UTC * * * * *', /spec\.timezone/],
    ['H * * * *', /hash/],
    ['0 0 30 2 *', /cron/],
    ['*/0 * * * *', /cron/],
    ['   ', /empty/]
  ] as const) {
    it(`refuses the schedule ${JSON.stringify(schedule)}`, () => {
      const messages = expectInvalidPaths(
        () => validateResource(edit(ping, { 'spec.schedule': schedule })),
        ['spec.schedule']
      )
      assert.match(messages.get('spec.schedule') ?? '', why)
    })
  }

  for (const timezone of ['Foo/Bar', '+01:00', 'Z', 'Europe/Paris ']) {
    it(`refuses the timezone ${JSON.stringify(timezone)}`, () => {
      expectInvalidPaths(() => validateResource(edit(ping, { 'spec.timezone': timezone })), ['spec.timezone'])
    })
  }

  it('bad ISO-8601 durations, and a zero timeout', () => {
    const messages = expectInvalidPaths(
      () =>
        validateResource(
          edit(kafka, { 'spec.delivery': { backoffDelay: '10s', timeout: 'PT0S', retryAfterMax: 'P1.5DT1H' } })
        ),
      ['spec.delivery.backoffDelay', 'spec.delivery.timeout', 'spec.delivery.retryAfterMax']
    )
    assert.equal(
      messages.get('spec.delivery.backoffDelay'),
      'not an ISO-8601 duration (for example PT0.5S, PT10S, PT1M, P1D)'
    )
    assert.equal(messages.get('spec.delivery.timeout'), 'must be greater than zero')
  })

  it('bad destinations: sink and dead letter sink', () => {
    const messages = expectInvalidPaths(
      () =>
        validateResource(
          edit(kafka, {
            'spec.sink': { ref: { apiVersion: 'eventing.knative.dev/v1', kind: 'Broker', name: 'default' } },
            'spec.delivery.deadLetterSink': {
              ref: { apiVersion: 'apps/v1', kind: 'Service', name: 'Dead_Letters', namespace: 'A' },
              uri: 'http://absolute.example.com/'
            }
          })
        ),
      [
        'spec.sink.ref.kind',
        'spec.delivery.deadLetterSink.ref.apiVersion',
        'spec.delivery.deadLetterSink.ref.name',
        'spec.delivery.deadLetterSink.ref.namespace',
        'spec.delivery.deadLetterSink.uri'
      ]
    )
    assert.match(
      messages.get('spec.sink.ref.kind') ?? '',
      /only kind Service \(apiVersion v1 or serving\.knative\.dev\/v1\)/
    )
  })

  for (const [uri, why] of [
    ['ftp://files.example.com/x', /scheme ftp/],
    ['/relative', /absolute/],
    ['not a url', /absolute/]
  ] as const) {
    it(`refuses the sink uri ${uri} without a ref`, () => {
      const messages = expectInvalidPaths(
        () => validateResource(edit(kafka, { 'spec.sink': { uri } })),
        ['spec.sink.uri']
      )
      assert.match(messages.get('spec.sink.uri') ?? '', why)
    })
  }

  it('bad names: object, namespace, labels, annotations, topics, servers, extensions, CACerts', () => {
    expectInvalidPaths(
      () =>
        validateResource(
          edit(kafka, {
            'metadata.name': 'Orders_1',
            'metadata.namespace': 'a.b',
            'metadata.labels': { 'example.com/ok': 'yes', 'Bad Key': 'v', ok: 'bad value!' },
            'metadata.annotations': { '/x': 'v' },
            'spec.topics': ['orders', 'bad topic', 'orders'],
            'spec.bootstrapServers': ['kafka:0', 'kafka', 'a:1,,b:2'],
            'spec.ceOverrides': { extensions: { good1: 'v', Bad: 'v', type: 'x' } },
            'spec.sink.CACerts': 'not pem'
          })
        ),
      [
        'metadata.name',
        'metadata.namespace',
        'metadata.labels["Bad Key"]',
        'metadata.labels.ok',
        'metadata.annotations["/x"]',
        'spec.topics[1]',
        'spec.topics[2]',
        'spec.bootstrapServers[0]',
        'spec.bootstrapServers[1]',
        'spec.bootstrapServers[2]',
        'spec.ceOverrides.extensions.Bad',
        'spec.ceOverrides.extensions.type',
        'spec.sink.CACerts'
      ]
    )
  })

  it('SASL without credentials, a TLS certificate without its key', () => {
    expectInvalidPaths(
      () =>
        validateResource(
          edit(kafka, {
            'spec.net': {
              sasl: { enable: true, type: { secretKeyRef: { name: 's', key: 'type' } } },
              tls: { enable: true, cert: { secretKeyRef: { name: 's', key: 'tls.crt' } } }
            }
          })
        ),
      ['spec.net.sasl.user', 'spec.net.sasl.password', 'spec.net.tls.key']
    )
  })

  it('invalid base64, and data that is not JSON while contentType says it is', () => {
    expectInvalidPaths(
      () => validateResource(edit(ping, { 'spec.data': undefined, 'spec.dataBase64': 'not base64!' })),
      ['spec.dataBase64']
    )
    expectInvalidPaths(
      () => validateResource(edit(ping, { 'spec.contentType': 'application/json', 'spec.data': '{oops' })),
      ['spec.data']
    )
    expectInvalidPaths(() => validateResource(edit(ping, { 'spec.contentType': 'json' })), ['spec.contentType'])
  })
})

describe('validateResource: kind and shape', () => {
  it('an unknown kind says which kinds are served', () => {
    const error = catchShoal(
      () =>
        validateResource({ apiVersion: 'sources.knative.dev/v1', kind: 'ApiServerSource', metadata: { name: 'x' } }),
      'SHOAL_UNKNOWN_KIND'
    )
    assert.match(
      error.message,
      /KafkaSource \(sources\.knative\.dev\/v1beta1, sources\.knative\.dev\/v1\) and PingSource \(sources\.knative\.dev\/v1, sources\.knative\.dev\/v1beta2\)/
    )
    assert.deepEqual(
      error.fields.map(f => f.path),
      ['kind']
    )
  })

  it('a known kind under another apiVersion is an unknown kind, naming the apiVersion', () => {
    const error = catchShoal(
      () => validateResource(edit(kafka, { apiVersion: 'sources.knative.dev/v1alpha1' })),
      'SHOAL_UNKNOWN_KIND'
    )
    assert.match(error.message, /KafkaSource is served as sources\.knative\.dev\/v1beta1/)
  })

  it('missing apiVersion and kind are reported together', () => {
    expectInvalidPaths(() => validateResource({ metadata: { name: 'x' } }), ['apiVersion', 'kind'])
  })

  for (const input of [null, 'KafkaSource', 42, [kafka]]) {
    it(`refuses ${JSON.stringify(input)?.slice(0, 20)} as not an object`, () => {
      expectInvalidPaths(() => validateResource(input), ['(root)'])
    })
  }

  it('refuses values JSON cannot hold', () => {
    expectInvalidPaths(() => validateResource(edit(kafka, { 'spec.consumers': Number.NaN })), ['spec.consumers'])
    expectInvalidPaths(
      () => validateResource(edit(kafka, { 'metadata.creationTimestamp': new Date() })),
      ['metadata.creationTimestamp']
    )
    const cyclic: Record<string, unknown> = structuredClone(kafka)
    cyclic['self'] = cyclic
    catchShoal(() => validateResource(cyclic), 'SHOAL_INVALID')
  })
})
