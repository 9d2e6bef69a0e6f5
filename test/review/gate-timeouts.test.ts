// Review of issue 16: max-concurrency at a real sink whose answers take longer than the source's `delivery.timeout`.
// The gate gives a slot back when an attempt ends, and a timeout ends it on Shoal's side only: the sink goes on
// working on the request (an HTTP server does not stop a handler because the client hung up). The retry then takes
// the slot and adds a second request at the sink, and so on: with `retry: 3`, four requests of one event at once
// behind a limit of 1 — exactly when the sink is slow, which is what the limit is for. (If this is by design, the
// fix is a sentence in docs/delivery.md: a timed-out request stops counting against the limit.)
import assert from 'node:assert/strict'
import { after, test } from 'node:test'
import type { CloudEvent, DeliveryTarget } from '../../src/delivery/index.ts'
import { Deliverer, resolveDeliveryPolicy } from '../../src/delivery/index.ts'
import { startSink } from '../delivery/sink-server.ts'
import type { Answer } from '../delivery/sink-server.ts'

const open: { close(): Promise<void> }[] = []
after(async () => {
  await Promise.all(open.map(o => o.close()))
})

test('BUG: max-concurrency 1 — a sink slower than the timeout never works on more than 1 request of the source at once', async () => {
  // The sink holds every request until the test lets go: handlers running at once, counted at the sink.
  let running = 0
  let most = 0
  const waiting: Array<() => void> = []
  const sink = await startSink(async () => {
    running++
    most = Math.max(most, running)
    await new Promise<void>(resolve => waiting.push(resolve))
    running--
    return { status: 200 } satisfies Answer
  })
  open.push(sink)
  const deliverer = new Deliverer()
  open.push(deliverer)
  const target: DeliveryTarget = {
    sourceKey: 'KafkaSource/default/slow-sink',
    sink: { uri: sink.url },
    policy: resolveDeliveryPolicy({ retry: 3, backoffPolicy: 'linear', backoffDelay: 'PT0.01S', timeout: 'PT0.2S' }),
    flow: { maxConcurrency: 1, adaptive: false }
  }
  const event: CloudEvent = {
    attributes: { specversion: '1.0', id: 'e-1', source: '/review', type: 'review' },
    extensions: {},
    data: Buffer.from('{}')
  }
  try {
    const outcome = await deliverer.deliver(event, target)
    assert.equal(outcome.kind, 'dropped', 'every attempt timed out')
    assert.equal(sink.received.length, 4, 'the first attempt and 3 retries reached the sink')
    assert.equal(most, 1, 'requests of the source the sink was working on at once, behind max-concurrency 1')
  } finally {
    for (const resolve of waiting.splice(0)) resolve()
  }
})
