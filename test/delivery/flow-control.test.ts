import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import type { FlowControlSpec } from '../../src/api/index.ts'
import type { CloudEvent, DeliveryTarget } from '../../src/delivery/index.ts'
import { Deliverer, resolveDeliveryPolicy } from '../../src/delivery/index.ts'
import { SinkGate } from '../../src/delivery/sink-gate.ts'
import type { Answer, Script, TestSink } from './sink-server.ts'
import { startSink } from './sink-server.ts'

const open: { close(): Promise<void> }[] = []

after(async () => {
  await Promise.all(open.map(o => o.close()))
})

/** A sink that counts the requests it is answering at once, and the most it ever was. */
async function countingSink(answer: (n: number) => Answer | Promise<Answer>): Promise<TestSink & { most(): number }> {
  let now = 0
  let most = 0
  const script: Script = async (_request, n) => {
    now++
    most = Math.max(most, now)
    try {
      return await answer(n)
    } finally {
      now--
    }
  }
  const sink = await startSink(script)
  open.push(sink)
  return Object.assign(sink, { most: () => most })
}

function target(uri: string, sourceKey: string, flow?: FlowControlSpec): DeliveryTarget {
  const policy = resolveDeliveryPolicy({ retry: 1000, backoffPolicy: 'linear', backoffDelay: 'PT0.01S' })
  return { sourceKey, sink: { uri }, policy, ...(flow === undefined ? {} : { flow }) }
}

function event(i: number): CloudEvent {
  return {
    attributes: { specversion: '1.0', id: `e-${i}`, source: '/test', type: 'test' },
    extensions: {},
    data: Buffer.from(String(i))
  }
}

const settle = (ms: number): Promise<Answer> => new Promise(resolve => setTimeout(() => resolve({ status: 200 }), ms))

describe('per-sink flow control', () => {
  it('an explicit max-concurrency is never exceeded at the sink, and every event arrives', async () => {
    const sink = await countingSink(() => settle(5))
    const deliverer = new Deliverer()
    open.push(deliverer)
    const t = target(sink.url, 'KafkaSource/shop/limited', { maxConcurrency: 3, adaptive: false })
    const outcomes = await Promise.all(Array.from({ length: 60 }, (_, i) => deliverer.deliver(event(i), t)))
    assert.ok(outcomes.every(o => o.kind === 'delivered'))
    assert.equal(sink.received.length, 60)
    assert.ok(sink.most() <= 3, `the sink saw ${sink.most()} requests at once`)
    assert.equal(sink.most(), 3, 'the limit is used')
    const [state] = deliverer.flow()
    assert.deepEqual(
      { ...state, latencyMs: undefined },
      {
        sourceKey: 'KafkaSource/shop/limited',
        sink: new URL(sink.url).origin,
        adaptive: false,
        limit: 3,
        inFlight: 0,
        queued: 0,
        latencyMs: undefined
      }
    )
  })

  it('the limit holds through retries, and a source without flow control keeps the old path', async () => {
    const sink = await countingSink(n => (n % 2 === 0 ? { status: 503, headers: { 'retry-after': '0' } } : settle(2)))
    const deliverer = new Deliverer()
    open.push(deliverer)
    const limited = target(sink.url, 'KafkaSource/shop/a', { maxConcurrency: 2, adaptive: false })
    const outcomes = await Promise.all(Array.from({ length: 30 }, (_, i) => deliverer.deliver(event(i), limited)))
    assert.ok(outcomes.every(o => o.kind === 'delivered'))
    assert.ok(sink.most() <= 2, `the sink saw ${sink.most()} requests at once`)
    const plain = target(sink.url, 'KafkaSource/shop/b')
    const more = await Promise.all(Array.from({ length: 10 }, (_, i) => deliverer.deliver(event(i), plain)))
    assert.ok(more.every(o => o.kind === 'delivered'))
    assert.deepEqual(
      deliverer.flow().map(s => s.sourceKey),
      ['KafkaSource/shop/a'],
      'no gate for a source without the annotations'
    )
  })

  it('adaptive: a sink answering 503 is held to a low limit while a healthy sink on the same dispatcher gets all its events; nothing lost', async () => {
    const deliverer = new Deliverer()
    open.push(deliverer)
    const healthyCount = 400
    let healthyDone = false
    const healthy = await countingSink(() => settle(1))
    let limitSeen: number | undefined
    const failing = await countingSink(n => {
      if (healthyDone) return settle(1)
      if (n === 40) limitSeen = deliverer.flow().find(s => s.sourceKey === 'KafkaSource/shop/failing')?.limit
      return { status: 503, headers: { 'retry-after': '0' } }
    })
    const adaptive = { maxConcurrency: 16, adaptive: true }
    const toFailing = target(failing.url, 'KafkaSource/shop/failing', adaptive)
    const toHealthy = target(healthy.url, 'KafkaSource/shop/healthy', adaptive)
    const failingDeliveries = Array.from({ length: 100 }, (_, i) => deliverer.deliver(event(i), toFailing))
    const healthyOutcomes = await Promise.all(
      Array.from({ length: healthyCount }, (_, i) => deliverer.deliver(event(i), toHealthy))
    )
    // Every healthy event arrived while the failing sink still answered 503.
    healthyDone = true
    assert.ok(healthyOutcomes.every(o => o.kind === 'delivered'))
    assert.equal(healthy.received.length, healthyCount)
    assert.ok(
      limitSeen !== undefined && limitSeen <= 4,
      `the failing sink's limit was ${limitSeen} after 40 answers of 503`
    )
    const failingOutcomes = await Promise.all(failingDeliveries)
    assert.ok(
      failingOutcomes.every(o => o.kind === 'delivered'),
      'nothing lost'
    )
    const ids = new Set(failing.received.filter((_, n) => n >= 0).map(r => r.headers['ce-id']))
    assert.equal(ids.size, 100)
    assert.ok(failing.most() <= 16)
  })

  it('a waiting request that is stopped leaves the queue: aborted, nothing sent', async () => {
    const sink = await countingSink(() => settle(50))
    const deliverer = new Deliverer()
    open.push(deliverer)
    const t = target(sink.url, 'KafkaSource/shop/stop', { maxConcurrency: 1, adaptive: false })
    const stop = new AbortController()
    const first = deliverer.deliver(event(0), t)
    const second = deliverer.deliver(event(1), t, stop.signal)
    stop.abort()
    assert.equal((await second).kind, 'aborted')
    assert.equal((await first).kind, 'delivered')
    assert.equal(sink.received.length, 1)
    assert.equal(deliverer.flow()[0]?.queued, 0)
  })
})

describe('SinkGate rate', () => {
  it('sends at most one request per 1/rate seconds, FIFO', async () => {
    let clock = 0
    const gate = new SinkGate('s', 'http://x', { maxRate: 2, adaptive: false }, 128, () => clock)
    const order: number[] = []
    const first = await gate.acquire()
    const waits = [1, 2].map(i => gate.acquire().then(p => (order.push(i), p)))
    await new Promise(resolve => setImmediate(resolve))
    assert.deepEqual(order, [], 'the next request waits 500 ms')
    clock = 500
    gate.release(first, undefined)
    await new Promise(resolve => setImmediate(resolve))
    assert.deepEqual(order, [1])
    clock = 1000
    gate.release(await waits[0]!, undefined)
    await Promise.all(waits)
    assert.deepEqual(order, [1, 2])
  })
})
