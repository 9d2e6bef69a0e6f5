// The adaptive limit (AIMD) with batched delivery. The limiter's latency signal was per request:
// "slow" is later than 2 × the lowest latency seen + 50 ms. A batch's latency grows with its size at a perfectly
// healthy sink, and a source that batches sends small batches in a lull (batch-max-wait closes them) and full ones in
// a burst. The small ones set the baseline; the full ones then read as overload and halve the limit, though the sink
// answers every request 2xx at the same per-event speed. A real sink whose time per batch is proportional to its
// events; the truth is the most requests it held at once per round.
import assert from 'node:assert/strict'
import { after, test } from 'node:test'
import type { CloudEvent, DeliveryTarget } from '../../src/delivery/index.ts'
import { Deliverer, eventBatch, resolveDeliveryPolicy } from '../../src/delivery/index.ts'
import { startSink } from './sink-server.ts'
import type { TestSink } from './sink-server.ts'

const open: { close(): Promise<void> }[] = []
after(async () => {
  await Promise.all(open.map(o => o.close()))
})

function event(i: number): CloudEvent {
  return {
    attributes: { specversion: '1.0', id: `e-${i}`, source: '/review', type: 'review' },
    extensions: {},
    data: Buffer.from(`{"i":${i}}`)
  }
}

const LIMIT = 8
const FULL = 500
/** The sink's work: 0.4 ms per event, whatever the load (it is never overloaded). */
const MS_PER_EVENT = 0.4

test('an adaptive limit is not halved for a healthy sink because full batches take longer than small ones', async () => {
  let now = 0
  let most = 0
  const sink: TestSink = await startSink(async request => {
    now++
    most = Math.max(most, now)
    const events = (JSON.parse(request.body.toString()) as unknown[]).length
    await new Promise(resolve => setTimeout(resolve, events * MS_PER_EVENT))
    now--
    return { status: 200 }
  })
  open.push(sink)
  const deliverer = new Deliverer()
  open.push(deliverer)
  const target: DeliveryTarget = {
    sourceKey: 'KafkaSource/default/batched',
    sink: { uri: sink.url },
    policy: resolveDeliveryPolicy({ retry: 0 }),
    flow: { maxConcurrency: LIMIT, adaptive: true }
  }
  let id = 0
  const batch = (size: number) => eventBatch(Array.from({ length: size }, () => event(id++)))

  // A lull: batches of one or two events (the batch-max-wait closes them), one at a time.
  for (let i = 0; i < 10; i++) {
    const outcome = await deliverer.deliver(batch(1 + (i % 2)), target)
    assert.equal(outcome.kind, 'delivered')
  }
  // A burst: rounds of LIMIT full batches at once, as a backlog of a busy source brings them.
  const heldPerRound: number[] = []
  for (let round = 0; round < 4; round++) {
    most = 0
    const outcomes = await Promise.all(Array.from({ length: LIMIT }, () => deliverer.deliver(batch(FULL), target)))
    assert.ok(outcomes.every(o => o.kind === 'delivered'))
    heldPerRound.push(most)
  }
  const [state] = deliverer.flow()
  assert.deepEqual(
    heldPerRound,
    [LIMIT, LIMIT, LIMIT, LIMIT],
    `requests the healthy sink held at once per round (the gate's limit ended at ${state?.limit}, latency ${state?.latencyMs} ms)`
  )
})
