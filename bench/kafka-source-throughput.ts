// KafkaSource data-plane throughput: 1 KiB records on a 12-partition topic, delivered unordered by one
// `shoal dispatcher` process to a sink that answers 202 at once; against (a) the sink's raw capacity, measured
// by autocannon in the same run, and (b) a naive kafkajs `eachMessage` + `fetch` peer on the same records.
//
//   npm run bench:kafka-source [-- --records 200000 --raw-seconds 10 --peer-seconds 30 --cpu-prof DIR]
import { fork } from 'node:child_process'
import { parseArgs } from 'node:util'
import autocannon from 'autocannon'
import { Pool } from 'undici'
import { DEFAULT_MAX_IN_FLIGHT } from '../src/kafka-source/index.ts'
import {
  PARTITIONS,
  RECORD_BYTES,
  cpuWindow,
  deleteTopic,
  fillTopic,
  machine,
  startKafka,
  startShoal,
  startSink,
  waitForCount
} from './kafka-source-harness.ts'
import type { Counted, CpuUse } from './kafka-source-harness.ts'

const { values } = parseArgs({
  options: {
    records: { type: 'string', default: '200000' },
    consumers: { type: 'string', default: '3' },
    /** autocannon's connections; the dispatcher's default cap per sink origin is 128. */
    connections: { type: 'string', default: '128' },
    'raw-seconds': { type: 'string', default: '10' },
    'peer-seconds': { type: 'string', default: '30' },
    /** Write a CPU profile of the dispatcher process into this folder. */
    'cpu-prof': { type: 'string' },
    'skip-raw': { type: 'boolean', default: false },
    'skip-peer': { type: 'boolean', default: false }
  }
})
const records = Number(values.records)
const consumers = Number(values.consumers)
const connections = Number(values.connections)
const rawSeconds = Number(values['raw-seconds'])
const peerSeconds = Number(values['peer-seconds'])

const fmt = (n: number) => Math.round(n).toLocaleString('en-US')
const log = (line: string) => process.stderr.write(`${line}\n`)

/** One row of the table: who sent, how fast, and what CPU it took (µs of CPU per request, cores). */
interface Row {
  readonly name: string
  readonly rate: number
  readonly senderMicros: number
  readonly senderCores: number
  readonly sinkCores: number
  readonly machineCores: number
}

const kafka = await startKafka()
const topic = `bench-ks-${process.pid}`
const sink = await startSink()
const rows: Row[] = []
try {
  const produceMs = await fillTopic(kafka.brokers, topic, records)
  log(`produced ${fmt(records)} records of ${RECORD_BYTES} B over ${PARTITIONS} partitions in ${fmt(produceMs)} ms`)
  if (!values['skip-raw']) {
    rows.push(await measureRaw())
    rows.push(await measureUndiciLoop())
  }
  rows.push(await measureShoal())
  if (!values['skip-peer']) rows.push(await measurePeer())
} finally {
  await sink.stop()
  await deleteTopic(kafka.brokers, topic)
  await kafka.stop()
}

console.log(`\n${machine()}, ${fmt(records)} records of ${RECORD_BYTES} B, ${PARTITIONS} partitions\n`)
console.log('| sender | requests/s | sender CPU µs / request | sender cores | sink cores | machine cores |')
console.log('|---|---:|---:|---:|---:|---:|')
for (const r of rows) {
  const cells = [fmt(r.rate), r.senderMicros.toFixed(0), r.senderCores.toFixed(2), r.sinkCores.toFixed(2)]
  console.log(`| ${r.name} | ${cells.join(' | ')} | ${r.machineCores.toFixed(2)} |`)
}
const find = (prefix: string) => rows.find(r => r.name.startsWith(prefix))?.rate
const [raw, shoal, peer] = [find('raw'), find('Shoal'), find('naive')]
if (shoal !== undefined && raw !== undefined)
  console.log(`\nShoal / raw sink capacity: ${(shoal / raw).toFixed(2)} (goal ≥ 0.6)`)
if (shoal !== undefined && peer !== undefined)
  console.log(`Shoal / naive peer: ${(shoal / peer).toFixed(1)} (goal ≥ 3)`)

function row(name: string, rate: number, seconds: number, count: number, use: CpuUse, sender: string): Row {
  return {
    name,
    rate,
    senderMicros: ((use.seconds[sender] ?? 0) * 1e6) / count,
    senderCores: (use.seconds[sender] ?? 0) / seconds,
    sinkCores: (use.seconds['sink'] ?? 0) / seconds,
    machineCores: (use.seconds['machine'] ?? 0) / seconds
  }
}

/** A row from what the sink counted: the rate from its first request to its last. */
function countedRow(name: string, stats: Counted, sender: string): Row {
  const rate = stats.spanMs > 0 ? ((stats.count - 1) * 1000) / stats.spanMs : 0
  return row(name, rate, stats.cpuSeconds, Math.max(1, stats.cpuEvents), stats.cpu, sender)
}

/** The sink's raw capacity: autocannon, in this (otherwise idle) process. */
async function measureRaw(): Promise<Row> {
  const cpu = cpuWindow({ sink: sink.pid, autocannon: process.pid })
  const result = await autocannon({
    url: sink.url,
    method: 'POST',
    headers: { 'content-type': 'application/octet-stream' },
    body: Buffer.alloc(RECORD_BYTES, 'x').toString(),
    connections,
    pipelining: 1,
    duration: rawSeconds
  })
  const use = cpu(rawSeconds)
  log(
    `raw: ${fmt(result.requests.total)} requests in ${rawSeconds} s, non-2xx ${result.non2xx}, errors ${result.errors}`
  )
  return row(
    'raw sink capacity (autocannon)',
    result.requests.total / rawSeconds,
    rawSeconds,
    result.requests.total,
    use,
    'autocannon'
  )
}

/**
 * What the HTTP client alone costs: a bare undici Pool (the dispatcher's connection cap) with as many requests
 * in flight as Shoal's members hold, CloudEvent headers and a 1 KiB body, no Kafka.
 */
async function measureUndiciLoop(): Promise<Row> {
  const pool = new Pool(new URL(sink.url).origin, { connections, pipelining: 1 })
  const body = Buffer.alloc(RECORD_BYTES, 'x')
  const cpu = cpuWindow({ sink: sink.pid, undici: process.pid })
  const started = performance.now()
  const until = started + rawSeconds * 1000
  let sent = 0
  const loop = async () => {
    while (performance.now() < until) {
      const n = sent++
      const response = await pool.request({
        method: 'POST',
        path: '/',
        headers: {
          'content-type': 'application/octet-stream',
          'ce-specversion': '1.0',
          'ce-id': `partition:${n % PARTITIONS}/offset:${n}`,
          'ce-source': `/apis/v1/namespaces/default/kafkasources/throughput#${topic}`,
          'ce-type': 'dev.knative.kafka.event',
          'ce-subject': `partition:${n % PARTITIONS}#${n}`,
          'ce-time': new Date().toISOString(),
          'ce-key': `k${n}`
        },
        body
      })
      await response.body.dump()
    }
  }
  await Promise.all(Array.from({ length: consumers * DEFAULT_MAX_IN_FLIGHT }, loop))
  const seconds = (performance.now() - started) / 1000
  await pool.close()
  return row('bare undici loop (no Kafka)', sent / seconds, seconds, sent, cpu(seconds), 'undici')
}

async function measureShoal(): Promise<Row> {
  const profile = values['cpu-prof']
  const shoal = await startShoal(
    kafka.brokers,
    `bench-ks-${process.pid}`,
    profile === undefined ? {} : { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${profile}` }
  )
  try {
    await sink.stats(true)
    const created = performance.now()
    await shoal.createSource({ name: 'throughput', topic, sink: sink.url, consumers, ordering: 'unordered' })
    const stats = await waitForCount(
      sink,
      records,
      { limitMs: 600_000, deadlineMs: 120_000 },
      { dispatcher: shoal.dispatcherPid, sink: sink.pid, broker: kafka.pid }
    )
    log(
      `shoal: ${fmt(stats.count)} events in ${(stats.spanMs / 1000).toFixed(1)} s from the first, ` +
        `${((performance.now() - created) / 1000).toFixed(1)} s from create; ${stats.cpu.text}` +
        (stats.finished ? '' : ' (not finished)')
    )
    return countedRow(`Shoal, one dispatcher (${consumers} consumers, unordered)`, stats, 'dispatcher')
  } finally {
    await shoal.stop()
  }
}

async function measurePeer(): Promise<Row> {
  await sink.stats(true)
  const peerScript = new URL('./peer-kafkajs.ts', import.meta.url).pathname
  const args = ['--brokers', kafka.brokers.join(','), '--topic', topic, '--group', `${topic}-peer`, '--sink', sink.url]
  // kafkajs sets a negative timeout on Node 22+, harmlessly; its warning would only clutter the output.
  const child = fork(peerScript, args, {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    execArgv: [...process.execArgv, '--disable-warning=TimeoutNegativeWarning']
  })
  const exited = new Promise<void>(resolve => child.once('exit', () => resolve()))
  try {
    const stats = await waitForCount(
      sink,
      records,
      { limitMs: peerSeconds * 1000, deadlineMs: 120_000 },
      { peer: child.pid, sink: sink.pid, broker: kafka.pid }
    )
    log(`peer: ${fmt(stats.count)} events in ${(stats.spanMs / 1000).toFixed(1)} s from the first; ${stats.cpu.text}`)
    return countedRow('naive peer (kafkajs eachMessage + fetch)', stats, 'peer')
  } finally {
    if (child.connected) child.disconnect()
    await exited
  }
}
