// Review of issue 16: delivery.shoal.dev/max-rate has no lower bound but "above 0". A rate below about 4.7e-7/s
// spaces requests more than 2^31−1 ms apart; the gate's one rate timer is then set past what Node's setTimeout
// holds, Node fires it after 1 ms instead (TimeoutOverflowWarning), the gate finds the time not come and sets it
// again: a timer every millisecond, and a warning on stderr each time, for as long as a request waits (days).
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { parseFlowControl } from '../../src/api/index.ts'
import { SinkGate } from '../../src/delivery/sink-gate.ts'

test('BUG: a max-rate the API accepts never sets a timer Node cannot hold (no 1 ms spin, no warning flood)', async () => {
  const parsed = parseFlowControl({ 'delivery.shoal.dev/max-rate': '0.0000001' })
  // Refusing such a rate at the API is a fix as good as spacing requests with a timer that holds.
  if (parsed.kind === 'invalid') return
  assert.equal(parsed.kind, 'flow')
  const warnings: string[] = []
  const onWarning = (warning: Error): void => void warnings.push(`${warning.name}: ${warning.message}`)
  process.on('warning', onWarning)
  const gate = new SinkGate('KafkaSource/default/slow', 'http://127.0.0.1:1', parsed.flow, 128)
  const stop = new AbortController()
  try {
    const first = await gate.acquire()
    // The second request waits for the rate: the gate sets its timer now.
    const second = gate.acquire(stop.signal).catch(() => 'aborted')
    // Warnings are emitted on the next tick; let a few event loop turns pass (no timing: counting turns).
    for (let i = 0; i < 5; i++) await new Promise(resolve => setImmediate(resolve))
    stop.abort()
    assert.equal(await second, 'aborted')
    gate.release(first, undefined)
  } finally {
    process.off('warning', onWarning)
  }
  assert.deepEqual(
    warnings.filter(w => w.startsWith('TimeoutOverflowWarning')),
    [],
    'the rate timer overflowed'
  )
})
