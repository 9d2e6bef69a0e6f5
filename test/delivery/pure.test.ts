import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { CloudEvent } from '../../src/delivery/index.ts'
import {
  DELIVERY_DEFAULTS,
  ERROR_DATA_LIMIT,
  MAX_TIMER_MS,
  backoffDelay,
  backoffSchedule,
  binaryHeaders,
  classifyStatus,
  deadLetterEvent,
  deliveryTargetFor,
  parseRetryAfter,
  percentEncode,
  resolveDeliveryPolicy,
  retryWait,
  statusClass
} from '../../src/delivery/index.ts'
import type { KafkaSource } from '../../src/api/index.ts'

const event: CloudEvent = {
  attributes: {
    specversion: '1.0',
    id: 'partition:0/offset:1',
    source: '/apis/v1/namespaces/ns/kafkasources/s#t',
    type: 'dev.knative.kafka.event',
    subject: 'partition:0#1',
    time: '2024-01-01T00:00:00.000Z',
    datacontenttype: 'text/plain; charset=utf-8'
  },
  extensions: { key: 'héllo wörld', traceparent: '00-abc-def-01' },
  data: Buffer.from('x')
}

describe('binary-mode headers', () => {
  it('maps attributes and extensions to ce- headers, datacontenttype to content-type, trace to W3C headers', () => {
    assert.deepEqual(binaryHeaders(event), {
      'ce-specversion': '1.0',
      'ce-id': 'partition:0/offset:1',
      'ce-source': '/apis/v1/namespaces/ns/kafkasources/s#t',
      'ce-type': 'dev.knative.kafka.event',
      'ce-subject': 'partition:0#1',
      'ce-time': '2024-01-01T00:00:00.000Z',
      'ce-key': 'h%C3%A9llo%20w%C3%B6rld',
      'ce-traceparent': '00-abc-def-01',
      'content-type': 'text/plain; charset=utf-8',
      traceparent: '00-abc-def-01'
    })
  })

  it('percent-encodes space, double quote, percent and everything outside U+0021–U+007E (spec example)', () => {
    assert.equal(percentEncode('Euro € 😀'), 'Euro%20%E2%82%AC%20%F0%9F%98%80')
    assert.equal(percentEncode('a"b%c'), 'a%22b%25c')
    assert.equal(percentEncode('tab\there\n'), 'tab%09here%0A')
    assert.equal(percentEncode('plain/value:1#x'), 'plain/value:1#x')
  })
})

describe('backoff', () => {
  it('linear waits delay·n, exponential delay·2^n, n the retry number from 1', () => {
    assert.deepEqual(backoffSchedule('linear', 100, 4), [100, 200, 300, 400])
    assert.deepEqual(backoffSchedule('exponential', 100, 4), [200, 400, 800, 1600])
  })

  it('is zero without a delay and clamped to what a timer can wait', () => {
    assert.equal(backoffDelay('exponential', 0, 3), 0)
    assert.equal(backoffDelay('exponential', 1000, 60), MAX_TIMER_MS)
  })
})

describe('Retry-After', () => {
  const now = Date.parse('2024-05-01T12:00:00Z')
  it('reads delay-seconds and HTTP-dates (IMF-fixdate, RFC 850, asctime)', () => {
    assert.equal(parseRetryAfter('120', now), 120_000)
    assert.equal(parseRetryAfter(' 0 ', now), 0)
    assert.equal(parseRetryAfter('Wed, 01 May 2024 12:00:30 GMT', now), 30_000)
    assert.equal(parseRetryAfter('Wednesday, 01-May-24 12:01:00 GMT', now), 60_000)
    assert.equal(parseRetryAfter('Wed May  1 12:00:05 2024', now), 5_000)
  })

  it('a date in the past is no wait; garbage and negatives are ignored', () => {
    assert.equal(parseRetryAfter('Wed, 01 May 2024 11:00:00 GMT', now), 0)
    assert.equal(parseRetryAfter('-5', now), undefined)
    assert.equal(parseRetryAfter('soon', now), undefined)
    assert.equal(parseRetryAfter('1.5', now), undefined)
    assert.equal(parseRetryAfter(undefined, now), undefined)
  })

  it('waits the longer of backoff and Retry-After, Retry-After capped by retryAfterMax; 0 ignores it', () => {
    assert.equal(retryWait(200, 5_000, undefined), 5_000)
    assert.equal(retryWait(200, 5_000, 1_000), 1_000)
    assert.equal(retryWait(2_000, 500, undefined), 2_000)
    assert.equal(retryWait(200, 5_000, 0), 200)
    assert.equal(retryWait(200, undefined, 1_000), 200)
  })
})

describe('retriable statuses (Knative SelectiveRetry)', () => {
  it('retries 404, 408, 409, 429 and 5xx; fails any other non-2xx at once', () => {
    for (const status of [404, 408, 409, 429, 500, 502, 503, 504, 599]) assert.equal(classifyStatus(status), 'retry')
    for (const status of [300, 301, 400, 401, 403, 405, 410, 413, 415, 422])
      assert.equal(classifyStatus(status), 'fail')
    for (const status of [200, 201, 202, 204]) assert.equal(classifyStatus(status), 'delivered')
    assert.equal(statusClass(202), '2xx')
    assert.equal(statusClass(503), '5xx')
  })
})

describe('dead letter event', () => {
  it('adds knativeerrordest, knativeerrorcode and the body base64-encoded, truncated', () => {
    const body = Buffer.alloc(ERROR_DATA_LIMIT + 500, 'e')
    const letter = deadLetterEvent(event, { destination: 'http://sink/', status: 400, data: body })
    assert.equal(letter.extensions['knativeerrordest'], 'http://sink/')
    assert.equal(letter.extensions['knativeerrorcode'], '400')
    assert.equal(Buffer.from(letter.extensions['knativeerrordata'] ?? '', 'base64').length, ERROR_DATA_LIMIT)
    assert.equal(letter.data, event.data)
    assert.equal(letter.extensions['key'], 'héllo wörld')
  })

  it('replaces error extensions of an earlier hop; no status, no knativeerrorcode', () => {
    const earlier = { ...event, extensions: { ...event.extensions, knativeerrorcode: '500' } }
    const letter = deadLetterEvent(earlier, { destination: 'http://sink/' })
    assert.equal(letter.extensions['knativeerrorcode'], undefined)
    assert.equal(letter.extensions['knativeerrordata'], undefined)
  })
})

describe('delivery policy', () => {
  it('fills every absent field with the defaults', () => {
    assert.deepEqual(resolveDeliveryPolicy(undefined), { ...DELIVERY_DEFAULTS })
    assert.deepEqual(resolveDeliveryPolicy({ retry: 0 }), { ...DELIVERY_DEFAULTS, retry: 0 })
  })

  it('reads ISO-8601 durations', () => {
    const policy = resolveDeliveryPolicy(
      { retry: 3, backoffPolicy: 'linear', backoffDelay: 'PT0.5S', timeout: 'PT10S', retryAfterMax: 'PT1M' },
      { uri: 'http://dls/' }
    )
    assert.deepEqual(policy, {
      retry: 3,
      backoffPolicy: 'linear',
      backoffDelayMs: 500,
      timeoutMs: 10_000,
      retryAfterMaxMs: 60_000,
      deadLetterSink: { uri: 'http://dls/' }
    })
  })

  it('resolves a KafkaSource’s sink and dead letter sink', () => {
    const source: KafkaSource = {
      apiVersion: 'sources.knative.dev/v1beta1',
      kind: 'KafkaSource',
      metadata: { name: 'orders', namespace: 'shop' },
      spec: {
        bootstrapServers: ['k:9092'],
        topics: ['t'],
        consumers: 1,
        initialOffset: 'latest',
        ordering: 'unordered',
        sink: { ref: { apiVersion: 'v1', kind: 'Service', name: 'display' } },
        delivery: { deadLetterSink: { uri: 'https://dls.example/x', CACerts: 'PEM' } }
      }
    }
    const resolved = deliveryTargetFor(source, { serviceUrlTemplate: 'http://{name}.{namespace}.svc' })
    assert.equal(resolved.kind, 'resolved')
    if (resolved.kind !== 'resolved') return
    assert.equal(resolved.target.sourceKey, 'KafkaSource/shop/orders')
    assert.deepEqual(resolved.target.sink, { uri: 'http://display.shop.svc' })
    assert.deepEqual(resolved.target.policy.deadLetterSink, { uri: 'https://dls.example/x', caCerts: 'PEM' })
    const broken = deliveryTargetFor(
      { ...source, spec: { ...source.spec, sink: { ref: { apiVersion: 'v1', kind: 'Pod', name: 'p' } } } },
      { serviceUrlTemplate: 'http://{name}.{namespace}.svc' }
    )
    assert.equal(broken.kind === 'unresolved' && broken.field, 'spec.sink')
  })
})
