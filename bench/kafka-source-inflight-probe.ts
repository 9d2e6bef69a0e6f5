// The in-flight benchmark's heap probe: what one held delivery costs in the delivery layer alone, without Kafka
// and without the noise of a whole dispatcher. One hold sink (bench/kafka-source-inflight-sink.ts) on 127.0.0.2;
// this process sends `--count` 1 KiB events that it holds, and reports heapUsed (live objects after a full GC),
// heapTotal (committed) and RSS per held request, above the same process warm and idle.
//
//   node --expose-gc bench/kafka-source-inflight-probe.ts [--count 15000] [--layer deliverer|undici]
//
// `deliverer` goes through Shoal's Deliverer.deliver (what a KafkaSource member calls, less the member and
// plane); `undici` is a bare Pool.dispatch with an empty handler: undici's own connection and request.
import { fork } from 'node:child_process'
import { parseArgs } from 'node:util'
import { Pool } from 'undici'
import type { Dispatcher } from 'undici'
import { Deliverer } from '../src/delivery/index.ts'
import type { CloudEvent, DeliveryTarget } from '../src/delivery/index.ts'
import type { HoldSinkCommand, HoldSinkMessage } from './kafka-source-inflight-sink.ts'

const { values } = parseArgs({
  options: {
    count: { type: 'string', default: '15000' },
    layer: { type: 'string', default: 'deliverer' },
    host: { type: 'string', default: '127.0.0.2' }
  }
})
const count = Number(values.count)
const gc = (globalThis as { gc?: () => void }).gc
if (gc === undefined) throw new Error('run with node --expose-gc')

const sink = fork(new URL('./kafka-source-inflight-sink.ts', import.meta.url).pathname, [
  '--host',
  values.host,
  '--hold-ms',
  '0'
])
const messages: HoldSinkMessage[] = []
let wake = (): void => {}
sink.on('message', (m: HoldSinkMessage) => {
  messages.push(m)
  wake()
})
async function next(): Promise<HoldSinkMessage> {
  while (messages.length === 0) await new Promise<void>(resolve => (wake = resolve))
  return messages.shift()!
}
async function command(c: HoldSinkCommand): Promise<Extract<HoldSinkMessage, { type: 'stats' }>> {
  sink.send(c)
  for (;;) {
    const m = await next()
    if (m.type === 'stats') return m
  }
}
const listening = await next()
if (listening.type !== 'listening') throw new Error('sink did not start')
const uri = `http://${values.host}:${listening.port}/`

const event = (n: number): CloudEvent => ({
  attributes: {
    specversion: '1.0',
    id: `probe-${n}`,
    source: '/probe',
    type: 'dev.knative.kafka.event'
  },
  extensions: {},
  data: Buffer.alloc(1024, n & 0xff)
})

const target: DeliveryTarget = {
  sourceKey: 'KafkaSource/bench/probe',
  sink: { uri },
  policy: {
    retry: 0,
    backoffPolicy: 'exponential',
    backoffDelayMs: 100,
    timeoutMs: 120_000
  }
}

const deliverer = new Deliverer({ maxConnectionsPerOrigin: count + 100 })
const pool = new Pool(uri, { pipelining: 1 })
const shutdown = new AbortController()
const empty: Dispatcher.DispatchHandler = {
  onRequestStart() {},
  onResponseStart() {},
  onResponseData() {},
  onResponseEnd() {},
  onResponseError() {}
}

function send(n: number): Promise<unknown> | undefined {
  if (values.layer === 'undici') {
    const e = event(n)
    pool.dispatch({ method: 'POST', path: '/', headers: { 'ce-id': e.attributes.id }, body: e.data }, empty)
    return undefined
  }
  return deliverer.deliver(event(n), target, shutdown.signal, shutdown.signal, performance.now())
}

function settle(): { heapUsed: number; heapTotal: number; rss: number } {
  for (let i = 0; i < 4; i++) gc!()
  const { heapUsed, heapTotal, rss } = process.memoryUsage()
  return { heapUsed, heapTotal, rss }
}

// Warm: connections, code paths, the sink's answers at once.
// The undici layer's dispatches are not awaited: its warm-up is the half second below.
await Promise.all(Array.from({ length: 200 }, (_, n) => send(n) ?? Promise.resolve()))
await new Promise(resolve => setTimeout(resolve, 500))
const idle = settle()
await command({ type: 'hold', ms: 600_000 })
for (let n = 0; n < count; n++) void send(n) // held by the sink on purpose: counted through the peer's stats
for (;;) {
  const stats = await command({ type: 'stats' })
  if (stats.held >= count) break
  await new Promise(resolve => setTimeout(resolve, 200))
}
const holding = settle()
const kb = (a: number, b: number) => ((b - a) / count / 1024).toFixed(2)
process.stdout.write(
  `${values.layer} holding ${count}: heapUsed ${kb(idle.heapUsed, holding.heapUsed)} KB, ` +
    `heapTotal ${kb(idle.heapTotal, holding.heapTotal)} KB, RSS ${kb(idle.rss, holding.rss)} KB per request ` +
    `(execArgv ${process.execArgv.join(' ') || '-'})\n`
)
await command({ type: 'release' })
shutdown.abort()
await deliverer.close()
await pool.destroy()
sink.disconnect()
