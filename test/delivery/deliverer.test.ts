import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import type {
  CloudEvent,
  DelivererOptions,
  DeliveryOutcome,
  DeliveryPolicy,
  DeliveryTarget,
  AttemptInfo,
  RetryInfo
} from '../../src/delivery/index.ts'
import {
  BATCH_CONTENT_TYPE,
  Deliverer,
  DeliveryCounters,
  eventBatch,
  resolveDeliveryPolicy
} from '../../src/delivery/index.ts'
import { recordToEvent } from '../../src/kafka-source/index.ts'
import type { KafkaRecord } from '../../src/kafka-source/index.ts'
import type { DeliverySpec } from '../../src/api/index.ts'
import type { Answer, Received, Script, TestSink } from './sink-server.ts'
import { gate, startSink, unreachableUrl } from './sink-server.ts'
import { eventually } from '../helpers/wait.ts'

const source = { namespace: 'shop', name: 'orders' }
const open: { close(): Promise<void> }[] = []

after(async () => {
  await Promise.all(open.map(o => o.close()))
})

async function sink(script: Script, tls?: { key: string; cert: string }): Promise<TestSink> {
  const s = await startSink(script, tls)
  open.push(s)
  return s
}

function deliverer(options: DelivererOptions = {}): Deliverer {
  const d = new Deliverer(options)
  open.push(d)
  return d
}

function target(sinkUrl: string, spec: DeliverySpec, deadLetterUrl?: string, sourceKey = 'KafkaSource/shop/orders') {
  const policy: DeliveryPolicy = resolveDeliveryPolicy(
    spec,
    deadLetterUrl === undefined ? undefined : { uri: deadLetterUrl }
  )
  return { sourceKey, sink: { uri: sinkUrl }, policy } satisfies DeliveryTarget
}

function mapped(overrides: Partial<KafkaRecord> = {}): CloudEvent {
  const result = recordToEvent(
    {
      topic: 'orders',
      partition: 1,
      offset: 7n,
      key: Buffer.from('k1'),
      value: Buffer.from('{"n":1}'),
      headers: [[Buffer.from('content-type'), Buffer.from('application/json')]],
      timestamp: 1_714_564_800_000n,
      ...overrides
    },
    source,
    { ceOverrides: { extensions: { team: 'blue' } } }
  )
  assert.equal(result.kind, 'event')
  return result.kind === 'event' ? result.event : assert.fail()
}

const answer =
  (...answers: Answer[]): Script =>
  (_request, n) =>
    answers[Math.min(n, answers.length - 1)] as Answer

const fast = { backoffDelay: 'PT0.01S', backoffPolicy: 'exponential' } as const

function ceHeaders(request: Received): Record<string, string | string[] | undefined> {
  return Object.fromEntries(
    Object.entries(request.headers).filter(([name]) => name.startsWith('ce-') || name === 'content-type')
  )
}

describe('Deliverer: binary mode on the wire', () => {
  it('sends the mapping as ce- headers, datacontenttype as Content-Type, the payload byte for byte', async () => {
    const s = await sink(answer({ status: 202 }))
    const payload = Buffer.from([0x00, 0xff, 0xfe, 0x80, 0x0a, 0xc3])
    const outcome = await deliverer().deliver(mapped({ value: payload }), target(s.url, {}))
    assert.deepEqual(outcome, { kind: 'delivered', status: 202, attempts: 1 })
    const [request] = s.received
    assert.ok(request)
    assert.equal(request.url, '/events?x=1')
    assert.deepEqual(ceHeaders(request), {
      'ce-specversion': '1.0',
      'ce-id': 'partition:1/offset:7',
      'ce-source': '/apis/v1/namespaces/shop/kafkasources/orders#orders',
      'ce-type': 'dev.knative.kafka.event',
      'ce-subject': 'partition:1#7',
      'ce-time': '2024-05-01T12:00:00.000Z',
      'ce-key': 'k1',
      'ce-partitionkey': 'k1',
      'ce-kafkaheadercontenttype': 'application/json',
      'ce-knativekafkapartition': '1',
      'ce-knativekafkaoffset': '7',
      'ce-team': 'blue',
      'content-type': 'application/json'
    })
    assert.deepEqual(request.body, payload)
  })

  it('an empty payload is an empty body', async () => {
    const s = await sink(answer({ status: 200 }))
    const outcome = await deliverer().deliver(mapped({ value: null, headers: [] }), target(s.url, {}))
    assert.equal(outcome.kind, 'delivered')
    assert.equal(s.received[0]?.headers['content-length'], '0')
    assert.equal(s.received[0]?.body.length, 0)
    assert.equal(s.received[0]?.headers['content-type'], undefined)
  })

  it('passes binary and structured CloudEvents through with their own attributes', async () => {
    const s = await sink(answer({ status: 200 }))
    const d = deliverer()
    const binary = recordToEvent(
      {
        topic: 't',
        partition: 0,
        offset: 1,
        key: null,
        value: Buffer.from([1, 2, 3]),
        headers: [
          ['ce_specversion', '1.0'],
          ['ce_id', 'abc'],
          ['ce_source', '/upstream'],
          ['ce_type', 'com.example.thing'],
          ['ce_note', 'ünïcode'],
          ['content-type', 'application/octet-stream']
        ],
        timestamp: 0
      },
      source
    )
    const structured = recordToEvent(
      {
        topic: 't',
        partition: 0,
        offset: 2,
        key: null,
        value: Buffer.from(
          JSON.stringify({ specversion: '1.0', id: 'xyz', source: 'urn:s', type: 'com.example.s', data: { a: 1 } })
        ),
        headers: [['content-type', 'application/cloudevents+json']],
        timestamp: 0
      },
      source
    )
    for (const result of [binary, structured]) {
      assert.equal(result.kind, 'event')
      if (result.kind === 'event') assert.equal((await d.deliver(result.event, target(s.url, {}))).kind, 'delivered')
    }
    const [first, second] = s.received
    assert.deepEqual(ceHeaders(first as Received), {
      'ce-specversion': '1.0',
      'ce-id': 'abc',
      'ce-source': '/upstream',
      'ce-type': 'com.example.thing',
      'ce-note': '%C3%BCn%C3%AFcode',
      'ce-knativekafkapartition': '0',
      'ce-knativekafkaoffset': '1',
      'content-type': 'application/octet-stream'
    })
    assert.deepEqual(first?.body, Buffer.from([1, 2, 3]))
    assert.deepEqual(ceHeaders(second as Received), {
      'ce-specversion': '1.0',
      'ce-id': 'xyz',
      'ce-source': 'urn:s',
      'ce-type': 'com.example.s',
      'ce-knativekafkapartition': '0',
      'ce-knativekafkaoffset': '2',
      'content-type': 'application/json'
    })
    assert.equal(second?.body.toString(), '{"a":1}')
  })
})

describe('Deliverer: the delivery spec', () => {
  it('503 twice then 200: delivered after two backed-off retries', async () => {
    const s = await sink(answer({ status: 503 }, { status: 503 }, { status: 200 }))
    const retries: RetryInfo[] = []
    const outcome = await deliverer({ observer: { onRetry: r => retries.push(r) } }).deliver(
      mapped(),
      target(s.url, { ...fast, retry: 3 })
    )
    assert.deepEqual(outcome, { kind: 'delivered', status: 200, attempts: 3 })
    assert.deepEqual(
      retries.map(r => [r.endpoint, r.retry, r.delayMs]),
      [
        ['sink', 1, 20],
        ['sink', 2, 40]
      ]
    )
    assert.equal(s.received.length, 3)
    assert.ok(s.received.every(r => r.headers['ce-id'] === 'partition:1/offset:7'))
  })

  it('the first sink attempt reports its dispatch delay from the fetch time given; retries and others do not', async () => {
    const s = await sink(answer({ status: 503 }, { status: 200 }))
    const attempts: AttemptInfo[] = []
    const d = deliverer({ observer: { onAttempt: a => attempts.push(a) } })
    const fetchedAt = performance.now() - 40
    const before = performance.now()
    await d.deliver(mapped(), target(s.url, { ...fast, retry: 1 }), undefined, undefined, fetchedAt)
    const after = performance.now()
    assert.deepEqual(
      attempts.map(a => [a.attempt, a.status, a.dispatchDelayMs === undefined]),
      [
        [1, 503, false],
        [2, 200, true]
      ]
    )
    // From the fetch time to the request being written: at least what passed before deliver, at most until it ended.
    const delay = attempts[0]!.dispatchDelayMs!
    assert.ok(delay >= before - fetchedAt && delay <= after - fetchedAt, String(delay))
    attempts.length = 0
    await d.deliver(mapped(), target(s.url, fast))
    assert.equal(attempts[0]!.dispatchDelayMs, undefined, 'no fetch time, no dispatch delay')
  })

  it('400 goes to the dead letter sink at once, with knativeerrorcode=400', async () => {
    const s = await sink(answer({ status: 400, body: 'bad order' }))
    const dls = await sink(answer({ status: 202 }))
    const outcome = await deliverer().deliver(mapped(), target(s.url, { ...fast, retry: 5 }, dls.url))
    assert.deepEqual(outcome, {
      kind: 'dead-lettered',
      status: 202,
      sinkStatus: 400,
      reason: 'sink answered 400',
      attempts: 1,
      deadLetterAttempts: 1
    })
    assert.equal(s.received.length, 1)
    const [letter] = dls.received
    assert.equal(letter?.headers['ce-id'], 'partition:1/offset:7')
    assert.equal(letter?.headers['ce-knativeerrorcode'], '400')
    assert.equal(letter?.headers['ce-knativeerrordest'], s.url)
    assert.equal(Buffer.from(String(letter?.headers['ce-knativeerrordata']), 'base64').toString(), 'bad order')
    assert.deepEqual(letter?.body, Buffer.from('{"n":1}'))
  })

  it('a batch is dead-lettered event by event, so a dead letter sink that refuses batched mode still takes it', async () => {
    const s = await sink(answer({ status: 400 }))
    // The dead letter sink refuses batched mode (415), as most CloudEvents receivers do, and takes binary events.
    const dls = await sink(request => ({ status: request.headers['content-type'] === BATCH_CONTENT_TYPE ? 415 : 202 }))
    const events = [mapped({ offset: 7n }), mapped({ offset: 8n }), mapped({ offset: 9n })]
    const outcome = await deliverer({ maxDeadLetterAttempts: 5 }).deliver(
      eventBatch(events),
      target(s.url, fast, dls.url)
    )
    assert.equal(outcome.kind, 'dead-lettered')
    assert.deepEqual(
      dls.received.map(r => [r.headers['ce-id'], r.headers['ce-knativeerrorcode']]),
      [7, 8, 9].map(o => [`partition:1/offset:${o}`, '400'])
    )
  })

  it('an unreachable sink is retried, then dead-lettered', async () => {
    const dls = await sink(answer({ status: 200 }))
    const attempts: (number | string)[] = []
    // A refused connect is tried again for the connect timeout before the attempt counts as failed.
    const outcome = await deliverer({
      connectTimeoutMs: 300,
      observer: { onAttempt: a => attempts.push(a.endpoint === 'sink' ? (a.error ?? 'no error') : (a.status ?? 0)) }
    }).deliver(mapped(), target(await unreachableUrl(), { ...fast, retry: 2 }, dls.url))
    assert.equal(outcome.kind, 'dead-lettered')
    assert.equal(outcome.kind === 'dead-lettered' && outcome.attempts, 3)
    assert.equal(outcome.kind === 'dead-lettered' && outcome.sinkStatus, undefined)
    assert.match(outcome.kind === 'dead-lettered' ? outcome.reason : '', /unreachable on all 3 attempts.*ECONNREFUSED/)
    assert.equal(attempts.length, 4)
    assert.match(String(attempts[0]), /ECONNREFUSED/)
    assert.equal(attempts[3], 200)
    const [letter] = dls.received
    assert.equal(letter?.headers['ce-knativeerrorcode'], undefined)
    assert.match(Buffer.from(String(letter?.headers['ce-knativeerrordata']), 'base64').toString(), /^dispatch error: /)
  })

  it('honours Retry-After on 429 and 503, capped by retryAfterMax; ignores it on other statuses', async () => {
    const s = await sink(
      answer(
        { status: 429, headers: { 'retry-after': '3600' } },
        { status: 500, headers: { 'retry-after': '3600' } },
        { status: 503, headers: { 'retry-after': '0' } },
        { status: 200 }
      )
    )
    const log: string[] = []
    const outcome = await deliverer({
      observer: {
        onAttempt: a => log.push(`attempt ${a.status}`),
        onRetry: r => log.push(`wait ${r.delayMs}`)
      }
    }).deliver(mapped(), target(s.url, { backoffDelay: 'PT0.001S', retry: 5, retryAfterMax: 'PT0.05S' }))
    assert.deepEqual(outcome, { kind: 'delivered', status: 200, attempts: 4 })
    // 429: Retry-After 3600 s capped to 50 ms; 500: header ignored, backoff 4 ms; 503 with 0: backoff 8 ms.
    assert.deepEqual(log, ['attempt 429', 'wait 50', 'attempt 500', 'wait 4', 'attempt 503', 'wait 8', 'attempt 200'])
  })

  it('retryAfterMax PT0S ignores Retry-After', async () => {
    const s = await sink(answer({ status: 429, headers: { 'retry-after': '3600' } }, { status: 200 }))
    const waits: number[] = []
    const outcome = await deliverer({ observer: { onRetry: r => waits.push(r.delayMs) } }).deliver(
      mapped(),
      target(s.url, { backoffDelay: 'PT0.001S', retry: 1, retryAfterMax: 'PT0S' })
    )
    assert.equal(outcome.kind, 'delivered')
    assert.deepEqual(waits, [2])
  })

  it('a timed-out attempt is retried like a network error', async () => {
    const hold = gate()
    const s = await sink(async (_r, n) => {
      if (n === 0) await hold.promise
      return { status: 200 }
    })
    const outcome = await deliverer().deliver(mapped(), target(s.url, { ...fast, retry: 1, timeout: 'PT0.2S' }))
    hold.open()
    assert.deepEqual(outcome, { kind: 'delivered', status: 200, attempts: 2 })
  })

  it('without a dead letter sink, exhausted retries drop the event, and the drop is counted', async () => {
    const s = await sink(answer({ status: 500 }))
    const counters = new DeliveryCounters()
    const outcome = await deliverer({ observer: counters }).deliver(mapped(), target(s.url, { ...fast, retry: 1 }))
    assert.deepEqual(outcome, {
      kind: 'dropped',
      sinkStatus: 500,
      reason: 'sink answered 500 on all 2 attempts; no dead letter sink',
      attempts: 2,
      deadLetterAttempts: 0
    })
    const counts = counters.get('KafkaSource/shop/orders')
    assert.equal(counts.dropped, 1)
    assert.equal(counts.attempts['5xx'], 2)
    assert.equal(counts.retries, 1)
    assert.equal(counts.latency.count, 1)
  })

  it('a dead letter sink that is down is retried until it takes the event', async () => {
    const s = await sink(answer({ status: 422 }))
    const dls = await sink(answer({ status: 503 }, { status: 400 }, { status: 202 }))
    const outcome = await deliverer().deliver(mapped(), target(s.url, { ...fast, retry: 0 }, dls.url))
    assert.equal(outcome.kind, 'dead-lettered')
    assert.equal(outcome.kind === 'dead-lettered' && outcome.deadLetterAttempts, 3)
    assert.equal(dls.received.length, 3)
  })

  it('maxDeadLetterAttempts bounds the dead letter sink; then the event is dropped, counted', async () => {
    const s = await sink(answer({ status: 400 }))
    const dls = await sink(answer({ status: 500 }))
    const counters = new DeliveryCounters()
    const outcome = await deliverer({ maxDeadLetterAttempts: 2, observer: counters }).deliver(
      mapped(),
      target(s.url, { ...fast, retry: 0 }, dls.url)
    )
    assert.equal(outcome.kind, 'dropped')
    assert.match(outcome.kind === 'dropped' ? outcome.reason : '', /dead letter sink answered 500 on all 2 attempts/)
    assert.equal(counters.get('KafkaSource/shop/orders').deadLetterAttempts['5xx'], 2)
    assert.equal(counters.get('KafkaSource/shop/orders').dropped, 1)
  })

  it('aborting cancels a pending backoff at once', async () => {
    const s = await sink(answer({ status: 503 }))
    const controller = new AbortController()
    const d = deliverer({ observer: { onRetry: () => controller.abort() } })
    const outcome = await d.deliver(mapped(), target(s.url, { backoffDelay: 'PT1H', retry: 3 }), controller.signal)
    assert.deepEqual(outcome, { kind: 'aborted', attempts: 1, deadLetterAttempts: 0 })
  })

  it('one shutdown signal shared by many deliveries aborts them all: in flight, queued and backing off', async () => {
    const warnings: Error[] = []
    const onWarning = (w: Error) => warnings.push(w)
    process.on('warning', onWarning)
    try {
      const hold = gate()
      const held = await sink(async () => {
        await hold.promise
        return { status: 200 }
      })
      const failing = await sink(answer({ status: 503 }))
      const d = deliverer({ maxConnectionsPerOrigin: 1 })
      const controller = new AbortController()
      const deliveries = [
        ...Array.from({ length: 40 }, (_, i) =>
          d.deliver(mapped({ offset: BigInt(i) }), target(held.url, {}), controller.signal)
        ),
        ...Array.from({ length: 20 }, (_, i) =>
          d.deliver(mapped({ offset: BigInt(i) }), target(failing.url, { backoffDelay: 'PT1H' }), controller.signal)
        )
      ]
      await eventually(
        () => held.pending() === 1 && failing.received.length === 20,
        10_000,
        'one held, twenty backing off',
        5
      )
      controller.abort()
      const outcomes = await Promise.all(deliveries)
      hold.open()
      assert.ok(outcomes.every(o => o.kind === 'aborted'))
      assert.equal(d.load.inFlight + d.load.queued, 0)
      assert.deepEqual(
        warnings.filter(w => w.name === 'MaxListenersExceededWarning'),
        []
      )
    } finally {
      process.off('warning', onWarning)
    }
  })

  it('a stop sends nothing more but lets the request on the wire be answered; the wire signal cuts it short', async () => {
    const hold = gate()
    const held = await sink(async () => {
      await hold.promise
      return { status: 202 }
    })
    const d = deliverer({ maxConnectionsPerOrigin: 1 })
    const stop = new AbortController()
    const wire = new AbortController()
    const onWire = d.deliver(mapped({ offset: 1n }), target(held.url, {}), stop.signal, wire.signal)
    const queued = d.deliver(mapped({ offset: 2n }), target(held.url, {}), stop.signal, wire.signal)
    await eventually(
      () => held.pending() === 1 && d.load.queued === 1,
      10_000,
      'one on the wire, one waiting for the slot',
      5
    )
    stop.abort()
    assert.deepEqual(await queued, { kind: 'aborted', attempts: 0, deadLetterAttempts: 0 })
    hold.open()
    assert.deepEqual(await onWire, { kind: 'delivered', status: 202, attempts: 1 })
    assert.equal(held.received.length, 1, 'the queued event never reached the sink')

    const never = gate()
    const stuck = await sink(async () => {
      await never.promise
      return { status: 202 }
    })
    const cut = d.deliver(mapped({ offset: 3n }), target(stuck.url, {}), stop.signal, wire.signal)
    assert.deepEqual(await cut, { kind: 'aborted', attempts: 0, deadLetterAttempts: 0 }, 'already stopped: not sent')
    const fresh = new AbortController()
    const onWireToo = d.deliver(mapped({ offset: 4n }), target(stuck.url, {}), fresh.signal, wire.signal)
    await eventually(() => stuck.pending() === 1, 10_000, 'on the wire', 5)
    fresh.abort()
    wire.abort()
    assert.deepEqual(await onWireToo, { kind: 'aborted', attempts: 0, deadLetterAttempts: 0 })
    never.open()
  })

  it('a poison record goes to the dead letter sink with the reason; without one it is dropped', async () => {
    const result = recordToEvent(
      {
        topic: 'orders',
        partition: 2,
        offset: 9,
        key: null,
        value: Buffer.from('{"broken":'),
        headers: [['content-type', 'application/cloudevents+json']],
        timestamp: 0
      },
      source
    )
    assert.equal(result.kind, 'poison')
    if (result.kind !== 'poison') return
    const dls = await sink(answer({ status: 200 }))
    const d = deliverer()
    const s = await sink(answer({ status: 200 }))
    const lettered = await d.deadLetter(result.fallback, target(s.url, {}, dls.url), result.reason)
    assert.equal(lettered.kind, 'dead-lettered')
    assert.equal(s.received.length, 0)
    const [letter] = dls.received
    assert.equal(letter?.headers['ce-id'], 'partition:2/offset:9')
    assert.equal(letter?.headers['ce-knativeerrorcode'], undefined)
    assert.match(Buffer.from(String(letter?.headers['ce-knativeerrordata']), 'base64').toString(), /not valid JSON/)
    assert.deepEqual(letter?.body, Buffer.from('{"broken":'))
    const dropped: DeliveryOutcome = await d.deadLetter(result.fallback, target(s.url, {}), result.reason)
    assert.equal(dropped.kind, 'dropped')
  })
})

describe('Deliverer: connections', () => {
  it('never opens more connections to one origin than the cap, whatever the number of sources', async () => {
    const hold = gate()
    const s = await sink(async () => {
      await hold.promise
      return { status: 200 }
    })
    const d = deliverer({ maxConnectionsPerOrigin: 4 })
    const deliveries = Array.from({ length: 30 }, (_, i) =>
      d.deliver(mapped({ offset: BigInt(i) }), target(s.url, {}, undefined, `KafkaSource/shop/s${i % 5}`))
    )
    await eventually(() => s.pending() === 4 && d.load.queued === 26, 10_000, 'four requests held, the rest queued', 5)
    assert.equal(s.connections.open, 4)
    hold.open()
    const outcomes = await Promise.all(deliveries)
    assert.ok(outcomes.every(o => o.kind === 'delivered'))
    assert.equal(s.received.length, 30)
    assert.ok(s.connections.most <= 4, `at most 4 connections, saw ${s.connections.most}`)
    assert.equal(d.load.inFlight, 0)
  })

  it('a source with a long queue does not starve another source on the same slow sink', async () => {
    let release = gate()
    const s = await sink(async () => {
      await release.promise
      return { status: 200 }
    })
    const d = deliverer({ maxConnectionsPerOrigin: 1 })
    const hog = Array.from({ length: 10 }, (_, i) =>
      d.deliver(mapped({ offset: BigInt(i) }), target(s.url, {}, undefined, 'KafkaSource/shop/hog'))
    )
    await eventually(() => s.pending() === 1, 10_000, 'the first hog request at the sink', 5)
    const small = d.deliver(mapped({ offset: 100n }), target(s.url, {}, undefined, 'KafkaSource/shop/small'))
    await eventually(() => d.load.queued === 10, 10_000, 'both sources queued', 5)
    while (s.received.length < 11) {
      const current = release
      release = gate()
      current.open()
      await eventually(() => s.pending() === 1 || s.received.length === 11, 10_000, 'the next request', 5)
    }
    release.open()
    await Promise.all([...hog, small])
    const order = s.received.map(r => r.headers['ce-id'])
    // Round-robin: the small source waits one turn (the hog's request already queued), not the hog's nine.
    assert.equal(order.indexOf('partition:1/offset:100'), 2)
  })

  it('delivers to an https sink whose certificate CACerts trusts', async t => {
    const dir = mkdtempSync(join(tmpdir(), 'shoal-tls-'))
    t.after(() => rmSync(dir, { recursive: true, force: true }))
    execFileSync(
      'openssl',
      [
        ...['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1'],
        ...['-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')]
      ],
      { stdio: 'ignore' }
    )
    const cert = readFileSync(join(dir, 'cert.pem'), 'utf8')
    const key = readFileSync(join(dir, 'key.pem'), 'utf8')
    const s = await sink(answer({ status: 202 }), { key, cert })
    const d = deliverer()
    const trusted: DeliveryTarget = { ...target(s.url, {}), sink: { uri: s.url, caCerts: cert } }
    assert.deepEqual(await d.deliver(mapped(), trusted), { kind: 'delivered', status: 202, attempts: 1 })
    assert.deepEqual(s.received[0]?.body, Buffer.from('{"n":1}'))
    const untrusted = await d.deliver(mapped(), target(s.url, { retry: 0 }))
    assert.equal(untrusted.kind, 'dropped')
    assert.match(untrusted.kind === 'dropped' ? untrusted.reason : '', /self[- ]signed|certificate/i)
  })
})
