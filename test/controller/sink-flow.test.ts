import assert from 'node:assert/strict'
import { test } from 'node:test'
import { presentSource } from '../../src/controller/presentation.ts'
import { FlowIndex, flowRowsBySource } from '../../src/controller/sink-flow.ts'
import type { FlowReporter } from '../../src/controller/sink-flow.ts'
import type { SinkFlowReport } from '../../src/store/index.ts'
import { storedKafkaSource } from '../api/helpers.ts'

const KEY = 'KafkaSource/default/orders'

function report(source: string, sink: string, limit: number, extra: Partial<SinkFlowReport> = {}): SinkFlowReport {
  return { source, sink, adaptive: false, limit, inFlight: 1, queued: 0, ...extra }
}

const entry = storedKafkaSource

test('rows per source from alive dispatchers only, sorted by dispatcher then sink', () => {
  const dispatchers: FlowReporter[] = [
    {
      id: 'dispatcher-1',
      alive: true,
      sinks: [report(KEY, 'http://b:1', 2), report('KafkaSource/default/x', 'http://x:1', 9)]
    },
    { id: 'dispatcher-0', alive: true, sinks: [report(KEY, 'http://b:1', 3, { adaptive: true, latencyMs: 40 })] },
    { id: 'dispatcher-2', alive: false, sinks: [report(KEY, 'http://b:1', 5)] },
    { id: 'dispatcher-3', alive: true }
  ]
  const rows = flowRowsBySource(dispatchers)
  assert.deepEqual(rows.get(KEY), [
    { dispatcher: 'dispatcher-0', sink: 'http://b:1', adaptive: true, limit: 3, inFlight: 1, queued: 0, latencyMs: 40 },
    { dispatcher: 'dispatcher-1', sink: 'http://b:1', adaptive: false, limit: 2, inFlight: 1, queued: 0 }
  ])
  assert.deepEqual(
    rows.get('KafkaSource/default/x')?.map(r => r.limit),
    [9]
  )
})

test('the index is built again when a heartbeat brings a new report, and not otherwise', () => {
  const index = new FlowIndex()
  const first = [report(KEY, 'http://b:1', 2)]
  const d0 = { id: 'dispatcher-0', alive: true, sinks: first }
  const a = index.of([d0], KEY)
  assert.equal(index.of([{ ...d0 }], KEY), a, 'the same report: the same rows')
  const b = index.of([{ ...d0, sinks: [report(KEY, 'http://b:1', 1)] }], KEY)
  assert.deepEqual(
    b.map(r => r.limit),
    [1]
  )
  assert.deepEqual(index.of([{ ...d0, alive: false, sinks: first }], KEY), [])
  assert.deepEqual(index.of([], KEY), [])
})

test('a source presents the flow control of the dispatchers it is placed on as status.flowControl', () => {
  const rows = flowRowsBySource([
    {
      id: 'dispatcher-0',
      alive: true,
      sinks: [report(KEY, 'http://b:1', 2, { inFlight: 2, queued: 7, latencyMs: 120 })]
    },
    // Still holding the gate of a source that moved away (idle gates stay for 10 minutes): not shown.
    { id: 'dispatcher-1', alive: true, sinks: [report(KEY, 'http://b:1', 2, { inFlight: 0 })] }
  ]).get(KEY)
  const presented = presentSource(entry(['dispatcher-0']), 'http://{name}.{namespace}', undefined, undefined, rows) as {
    status: { flowControl?: unknown; placements?: unknown }
  }
  assert.deepEqual(presented.status.flowControl, [
    {
      dispatcher: 'dispatcher-0',
      sink: 'http://b:1',
      adaptive: false,
      limit: 2,
      inFlight: 2,
      queued: 7,
      latencyMs: 120
    }
  ])
  const none = presentSource(entry(['dispatcher-0']), 'http://{name}.{namespace}') as { status: object }
  assert.equal('flowControl' in none.status, false)
  const moved = presentSource(entry(['dispatcher-2']), 'http://{name}.{namespace}', undefined, undefined, rows) as {
    status: object
  }
  assert.equal('flowControl' in moved.status, false)
})
