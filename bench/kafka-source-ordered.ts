// KafkaSource ordered delivery: 1 KiB records on a 12-partition topic, delivered `ordering: ordered` (one
// record in flight per partition) by one `shoal dispatcher` process to a sink that answers 202 after 1 ms.
// Reports events/s per partition, and checks the order at the sink.
//
//   npm run bench:kafka-source-ordered [-- --records 60000 --consumers 3 --delay-ms 1]
import { parseArgs } from 'node:util'
import { Pool } from 'undici'
import {
  PARTITIONS,
  RECORD_BYTES,
  deleteTopic,
  fillTopic,
  machine,
  startKafka,
  startShoal,
  startSink,
  waitForCount
} from './kafka-source-harness.ts'

const { values } = parseArgs({
  options: {
    records: { type: 'string', default: '60000' },
    consumers: { type: 'string', default: '3' },
    'delay-ms': { type: 'string', default: '1' }
  }
})
const records = Number(values.records)
const consumers = Number(values.consumers)
const delayMs = Number(values['delay-ms'])

const fmt = (n: number) => Math.round(n).toLocaleString('en-US')
const log = (line: string) => process.stderr.write(`${line}\n`)

const kafka = await startKafka()
const topic = `bench-kso-${process.pid}`
const sink = await startSink({ delayMs, checkOrder: true })
const lines: string[] = []
try {
  const produceMs = await fillTopic(kafka.brokers, topic, records)
  log(`produced ${fmt(records)} records of ${RECORD_BYTES} B over ${PARTITIONS} partitions in ${fmt(produceMs)} ms`)
  const bare = await bareLoops()
  log(`bare undici loops: ${fmt(bare)} requests/s per loop`)
  const shoal = await startShoal(kafka.brokers, `bench-kso-${process.pid}`)
  try {
    await sink.stats(true)
    await shoal.createSource({ name: 'ordered', topic, sink: sink.url, consumers, ordering: 'ordered' })
    const stats = await waitForCount(
      sink,
      records,
      { limitMs: 300_000, deadlineMs: 120_000 },
      { dispatcher: shoal.dispatcherPid, sink: sink.pid, broker: kafka.pid }
    )
    log(`shoal: ${fmt(stats.count)} events in ${(stats.spanMs / 1000).toFixed(1)} s; ${stats.cpu.text}`)
    const perPartition = stats.partitions.map(p => (p.spanMs > 0 ? ((p.count - 1) * 1000) / p.spanMs : 0))
    const total = stats.spanMs > 0 ? ((stats.count - 1) * 1000) / stats.spanMs : 0
    const sorted = [...perPartition].sort((a, b) => a - b)
    lines.push(
      `${machine()}, ${fmt(records)} records of ${RECORD_BYTES} B, ${PARTITIONS} partitions, ` +
        `${consumers} consumers, sink answers after ${delayMs} ms` +
        (stats.finished ? '' : ` (stopped at the time limit after ${fmt(stats.count)})`),
      '',
      '| measure | value |',
      '|---|---:|',
      `| events/s, all partitions | ${fmt(total)} |`,
      `| events/s per partition, mean | ${fmt(total / PARTITIONS)} |`,
      `| events/s per partition, slowest … fastest | ${fmt(sorted[0] ?? 0)} … ${fmt(sorted.at(-1) ?? 0)} |`,
      `| ms per event per partition (mean) | ${(PARTITIONS / (total / 1000)).toFixed(2)} |`,
      `| events out of order at the sink | ${stats.outOfOrder} |`,
      `| reference: a bare undici loop, one request at a time, ${PARTITIONS} loops, no Kafka: requests/s per loop | ${fmt(bare)} |`,
      `| dispatcher CPU (cores) | ${((stats.cpu.seconds['dispatcher'] ?? 0) / stats.cpuSeconds).toFixed(2)} |`
    )
  } finally {
    await shoal.stop()
  }
} finally {
  await sink.stop()
  await deleteTopic(kafka.brokers, topic)
  await kafka.stop()
}
console.log(`\n${lines.join('\n')}`)

/** What one request at a time to this sink allows at best: 12 sequential undici loops for 5 s, no Kafka. */
async function bareLoops(): Promise<number> {
  const pool = new Pool(new URL(sink.url).origin, { connections: PARTITIONS, pipelining: 1 })
  const body = Buffer.alloc(RECORD_BYTES, 'x')
  const started = performance.now()
  const until = started + 5_000
  let sent = 0
  const loop = async () => {
    while (performance.now() < until) {
      sent++
      const response = await pool.request({ method: 'POST', path: '/', body })
      await response.body.dump()
    }
  }
  await Promise.all(Array.from({ length: PARTITIONS }, loop))
  const rate = (sent * 1000) / (performance.now() - started) / PARTITIONS
  await pool.close()
  return rate
}
