// A max-rate spaces requests 1/rate seconds apart with one timer. A spacing past what setTimeout holds (2^31−1 ms)
// made Node fire the timer after 1 ms with a TimeoutOverflowWarning, and the gate set it again: a timer every
// millisecond and a warning each time, for as long as a request waited. The API refuses such rates, and the gate
// holds any rate it is given without overflowing.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { FLOW_ANNOTATIONS, parseFlowControl } from '../../src/api/index.ts'
import type { FlowControlSpec } from '../../src/api/index.ts'
import { SinkGate } from '../../src/delivery/sink-gate.ts'

/** The TimeoutOverflowWarnings emitted while a second request waits for the rate, for a few event loop turns. */
async function overflowsWhileWaiting(flow: FlowControlSpec): Promise<string[]> {
  const warnings: string[] = []
  const onWarning = (warning: Error): void => void warnings.push(`${warning.name}: ${warning.message}`)
  process.on('warning', onWarning)
  const gate = new SinkGate('KafkaSource/default/slow', 'http://127.0.0.1:1', flow, 128)
  const stop = new AbortController()
  try {
    const first = await gate.acquire()
    const second = gate.acquire(stop.signal).catch(() => 'aborted')
    // Warnings are emitted on a later tick: let a few turns of the event loop pass (counting turns, not time).
    for (let i = 0; i < 5; i++) await new Promise(resolve => setImmediate(resolve))
    stop.abort()
    assert.equal(await second, 'aborted', 'the second request waited for the rate')
    gate.release(first, undefined)
  } finally {
    process.off('warning', onWarning)
  }
  return warnings.filter(w => w.startsWith('TimeoutOverflowWarning'))
}

describe('a max-rate slower than a timer holds', () => {
  it('is refused by the API, naming the annotation', () => {
    for (const rate of ['0.0000001', '0.0009', '0']) {
      const parsed = parseFlowControl({ [FLOW_ANNOTATIONS.maxRate]: rate })
      assert.equal(parsed.kind, 'invalid', rate)
      if (parsed.kind === 'invalid') assert.equal(parsed.errors[0]?.annotation, FLOW_ANNOTATIONS.maxRate)
    }
    assert.equal(parseFlowControl({ [FLOW_ANNOTATIONS.maxRate]: '0.001' }).kind, 'flow')
  })

  it('never overflows the gate timer at the slowest rate the API accepts', async () => {
    const parsed = parseFlowControl({ [FLOW_ANNOTATIONS.maxRate]: '0.001' })
    assert.equal(parsed.kind, 'flow')
    if (parsed.kind === 'flow') assert.deepEqual(await overflowsWhileWaiting(parsed.flow), [])
  })

  it('never overflows the gate timer at any rate it is given (one request in 30 years)', async () => {
    assert.deepEqual(await overflowsWhileWaiting({ maxRate: 1e-9, adaptive: false }), [])
  })
})
