// KafkaSource `ordering: key` against `ordered` and `unordered`: a 12-partition topic of 100 B records over
// 10,000 distinct keys (each key in one partition, as a keyed producer places it), one `shoal dispatcher` process,
// a sink that answers 202 after 20 ms. Each mode reads the topic from the start in a group of its own; events/s
// from the first event to the last (or to the time limit). The sink checks, per key, that no two requests are
// open at once and that the offsets come in order.
//
//   npm run bench:key-ordering [-- --records 60000 --keys 10000 --delay-ms 20 --consumers 3 --max-in-flight 200 --limit-s 40
//     --partitions 12 --sink node|python]
//
// --sink python: one test/sinks/python_sink.py per mode (the CloudEvents SDK over Python's ThreadingHTTPServer,
// listen backlog 5), which prints each event as it arrives and as it is answered; the same checks run on those lines.
// Then the sink's own ceiling, the peer: a bare undici loop with as many requests open as the key mode may have
// (`--consumers` × `--max-in-flight`, at most one per key) sends the same events to a fresh sink of the same kind for
// `--ceiling-s` seconds, with no Kafka and no ordering; key ÷ that ceiling says how much of the sink Shoal used.
import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { loadavg } from 'node:os'
import { parseArgs } from 'node:util'
import { Producer } from '@platformatic/kafka'
import { Pool } from 'undici'
import { ensureTopics } from '../src/kafka/index.ts'
import { PARTITIONS, deleteTopic, machine, sinkKindOf, sleep, startKafka, startShoal } from './kafka-source-harness.ts'
import { startPythonSink } from '../test/sinks/python-sink.ts'
import type { PythonSink } from '../test/sinks/python-sink.ts'

const { values } = parseArgs({
  options: {
    records: { type: 'string', default: '60000' },
    keys: { type: 'string', default: '10000' },
    'delay-ms': { type: 'string', default: '20' },
    consumers: { type: 'string', default: '3' },
    'max-in-flight': { type: 'string', default: '200' },
    'limit-s': { type: 'string', default: '40' },
    partitions: { type: 'string', default: String(PARTITIONS) },
    sink: { type: 'string', default: 'node' },
    'ceiling-s': { type: 'string', default: '15' }
  }
})
const partitions = Number(values.partitions)
const sinkKind = sinkKindOf(values.sink)
const records = Number(values.records)
const keys = Number(values.keys)
const delayMs = Number(values['delay-ms'])
const consumers = Number(values.consumers)
const maxInFlight = Number(values['max-in-flight'])
const limitMs = Number(values['limit-s']) * 1000
const RECORD_BYTES = 100
const MODES = ['ordered', 'unordered', 'key'] as const
type Mode = (typeof MODES)[number]

const fmt = (n: number) => Math.round(n).toLocaleString('en-US')
const log = (line: string) => process.stderr.write(`${line}\n`)

/** One mode's count at the sink: events answered, the span they came in, and what broke the key's order. */
class Tally {
  count = 0
  first = 0
  last = 0
  overlaps = 0
  outOfOrder = 0
  readonly #open = new Map<string, number>()
  readonly #lastOffset = new Map<string, number>()

  begin(key: string, offset: number): void {
    if (this.first === 0) this.first = performance.now()
    const open = this.#open.get(key) ?? 0
    if (open > 0) this.overlaps++
    this.#open.set(key, open + 1)
    if (offset <= (this.#lastOffset.get(key) ?? -1)) this.outOfOrder++
    this.#lastOffset.set(key, offset)
  }

  end(key: string): void {
    const open = this.#open.get(key)! - 1
    if (open === 0) this.#open.delete(key)
    else this.#open.set(key, open)
    this.count++
    this.last = performance.now()
  }

  rate(): number {
    return this.count > 1 ? ((this.count - 1) * 1000) / (this.last - this.first) : 0
  }
}

const tallies = new Map<Mode, Tally>(MODES.map(m => [m, new Tally()]))
/** The key of an event at the sink, and its offset, from its `subject` (`partition:P#O`) and `key` attribute. */
const keyOf = (subject: string, key: string): [string, number] => {
  const [partition, offset] = /partition:(\d+)#(\d+)/.exec(subject)!.slice(1)
  return [`${partition}/${key}`, Number(offset)]
}
const sink = createServer((req, res) => {
  const tally = tallies.get(req.url!.slice(1) as Mode)
  const [key, offset] = keyOf(String(req.headers['ce-subject']), String(req.headers['ce-key']))
  tally?.begin(key, offset)
  req.resume()
  req.on('end', () =>
    setTimeout(() => {
      tally?.end(key)
      res.writeHead(202).end()
    }, delayMs)
  )
})
sink.keepAliveTimeout = 60_000
sink.listen(0, '127.0.0.1')
await once(sink, 'listening')
const nodeSinkUrl = `http://127.0.0.1:${(sink.address() as AddressInfo).port}`
const pythonSinks = new Map<Mode, PythonSink>()
if (sinkKind === 'python') {
  for (const mode of MODES) {
    const tally = tallies.get(mode)!
    const open = new Map<string, string>()
    const started = await startPythonSink(['--delay-ms', String(delayMs), '--trace'], line => {
      if (line.kind === 'arrived') {
        const [key, offset] = keyOf(line.attributes['subject'] ?? '', line.attributes['key'] ?? '')
        open.set(line.attributes['id']!, key)
        tally.begin(key, offset)
      } else {
        const key = open.get(line.id)
        open.delete(line.id)
        if (key !== undefined) tally.end(key)
      }
    })
    pythonSinks.set(mode, started)
  }
}
const sinkUrlOf = (mode: Mode) => pythonSinks.get(mode)?.url ?? `${nodeSinkUrl}/${mode}`

const kafka = await startKafka()
const topic = `bench-kso-keys-${process.pid}`
const lines: string[] = []
try {
  const produceMs = await fill(kafka.brokers, topic)
  log(`produced ${fmt(records)} records of ${RECORD_BYTES} B, ${fmt(keys)} keys, in ${fmt(produceMs)} ms`)
  const shoal = await startShoal(kafka.brokers, `bench-kso-keys-${process.pid}`)
  try {
    for (const mode of MODES) {
      await createSource(shoal.api, mode, topic)
      const tally = tallies.get(mode)!
      const started = performance.now()
      while (tally.count < records && (tally.first === 0 || performance.now() - tally.first < limitMs)) {
        if (tally.first === 0 && performance.now() - started > 120_000) throw new Error(`${mode}: nothing in 120 s`)
        await sleep(100)
      }
      log(
        `${mode}: ${fmt(tally.count)} events in ${((tally.last - tally.first) / 1000).toFixed(1)} s, ${fmt(tally.rate())}/s, ` +
          `${tally.overlaps} key overlaps, ${tally.outOfOrder} out of key order`
      )
      await deleteSource(shoal.api, mode)
    }
  } finally {
    await shoal.stop()
  }
  const [ordered, unordered, key] = MODES.map(m => tallies.get(m)!)
  const ceiling = await sinkCeiling()
  log(
    `the sink's ceiling, a bare undici loop: ${fmt(ceiling.rate)}/s with ${ceiling.concurrency} requests open, ` +
      `${fmt(ceiling.failed)} requests failed (connections reset)`
  )
  const [load1] = loadavg()
  lines.push(
    `${machine()}, load average ${load1!.toFixed(1)} at the end (shared machine), ${fmt(records)} records of ` +
      `${RECORD_BYTES} B, ${partitions} partitions, ${fmt(keys)} keys, ${consumers} consumers, maxInFlight ` +
      `${maxInFlight}, ${sinkKind} sink answers after ${delayMs} ms, each mode at most ${limitMs / 1000} s`,
    '',
    '| ordering | events | events/s | key overlaps at the sink | out of key order at the sink |',
    '|---|---:|---:|---:|---:|',
    ...MODES.map(m => {
      const t = tallies.get(m)!
      return `| ${m} | ${fmt(t.count)} | ${fmt(t.rate())} | ${t.overlaps} | ${t.outOfOrder} |`
    }),
    '',
    `key ÷ ordered: ${(key!.rate() / ordered!.rate()).toFixed(1)}× (goal ≥ 10×); ` +
      `key ÷ unordered: ${(key!.rate() / unordered!.rate()).toFixed(2)}× (goal ≥ 0.8×)`,
    '',
    `the sink's own ceiling (a bare undici loop, ${ceiling.concurrency} requests open, no Kafka, no order): ` +
      `${fmt(ceiling.rate)} events/s (${fmt(ceiling.failed)} requests failed); key ÷ ceiling: ${(key!.rate() / ceiling.rate).toFixed(2)}×; the most any ` +
      `ordering could reach against ordered: ${(ceiling.rate / ordered!.rate()).toFixed(1)}×`
  )
} finally {
  await deleteTopic(kafka.brokers, topic)
  await kafka.stop()
  sink.close()
  sink.closeAllConnections()
  for (const python of pythonSinks.values()) await python.stop()
}
console.log(`\n${lines.join('\n')}`)

/**
 * What the sink can answer at most, measured with nothing of Shoal: a fresh sink of the same kind and delay, and a
 * bare undici loop keeping `concurrency` binary-mode events of the same size open for `--ceiling-s` seconds.
 */
async function sinkCeiling(): Promise<{
  readonly rate: number
  readonly concurrency: number
  readonly failed: number
}> {
  const concurrency = Math.min(keys, consumers * maxInFlight)
  let answered = 0
  const python =
    sinkKind === 'python'
      ? await startPythonSink(['--delay-ms', String(delayMs), '--trace'], () => undefined)
      : undefined
  const pool = new Pool(python?.url ?? nodeSinkUrl, { connections: concurrency, keepAliveTimeout: 60_000 })
  const body = Buffer.alloc(RECORD_BYTES, 1)
  const until = performance.now() + Number(values['ceiling-s']) * 1000
  let first = 0
  let last = 0
  let failed = 0
  const loop = async (lane: number) => {
    for (let n = 0; performance.now() < until; n++) {
      // A bare client as users write one: a connection the sink reset is an error, counted, and the loop goes on.
      const answer = await pool
        .request({
          method: 'POST',
          path: python === undefined ? '/ceiling' : '/',
          headers: {
            'ce-specversion': '1.0',
            'ce-id': `${lane}-${n}`,
            'ce-source': '/bench/ceiling',
            'ce-type': 'dev.knative.kafka.event',
            'ce-subject': `partition:0#${n}`,
            'ce-key': `k${lane}`,
            'content-type': 'application/octet-stream'
          },
          body
        })
        .catch(() => undefined)
      if (answer === undefined) {
        failed++
        continue
      }
      await answer.body.dump()
      if (answer.statusCode < 300) {
        if (first === 0) first = performance.now()
        answered++
        last = performance.now()
      }
    }
  }
  try {
    await Promise.all(Array.from({ length: concurrency }, (_, lane) => loop(lane)))
  } finally {
    await pool.close()
    await python?.stop()
  }
  return { rate: answered > 1 ? ((answered - 1) * 1000) / (last - first) : 0, concurrency, failed }
}

/** The topic: record n has key `k(n mod keys)`, in partition (n mod keys) mod partitions — each key in one partition. */
async function fill(brokers: readonly string[], name: string): Promise<number> {
  await ensureTopics({ brokers, clientId: 'bench' }, [{ name, partitions, configs: {} }])
  const producer = new Producer({ clientId: 'bench-producer', bootstrapBrokers: [...brokers], idempotent: true })
  const started = performance.now()
  try {
    for (let from = 0; from < records; from += 5_000) {
      const messages = Array.from({ length: Math.min(5_000, records - from) }, (_, i) => {
        const k = (from + i) % keys
        return {
          topic: name,
          partition: k % partitions,
          key: Buffer.from(`k${k}`),
          value: Buffer.alloc(RECORD_BYTES, 1)
        }
      })
      await producer.send({ acks: -1, messages })
    }
  } finally {
    await producer.close()
  }
  return performance.now() - started
}

async function createSource(api: string, mode: Mode, name: string): Promise<void> {
  const manifest = [
    'apiVersion: sources.knative.dev/v1beta1',
    'kind: KafkaSource',
    `metadata: {name: ${mode}}`,
    'spec:',
    `  bootstrapServers: [${kafka.brokers.join(',')}]`,
    `  topics: [${name}]`,
    `  consumers: ${consumers}`,
    '  initialOffset: earliest',
    `  ordering: ${mode}`,
    `  maxInFlight: ${maxInFlight}`,
    `  sink: {uri: "${sinkUrlOf(mode)}"}`,
    ''
  ].join('\n')
  const response = await fetch(`${api}/apis/sources.knative.dev/v1beta1/namespaces/default/kafkasources`, {
    method: 'POST',
    headers: { 'content-type': 'application/yaml' },
    body: manifest
  })
  if (response.status !== 201) throw new Error(`creating the source: ${response.status} ${await response.text()}`)
}

async function deleteSource(api: string, mode: Mode): Promise<void> {
  await fetch(`${api}/apis/sources.knative.dev/v1beta1/namespaces/default/kafkasources/${mode}`, { method: 'DELETE' })
}
