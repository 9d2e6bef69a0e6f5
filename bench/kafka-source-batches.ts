// Batched delivery (issue 16): the same topic of 1 KiB records delivered by a SourceRunner in this process
// through a Deliverer to one sink process that answers 202 at once — one event per request (binary mode), then
// batches of up to 100 (delivery.shoal.dev/batch-max-events: "100", batched mode). Events/s from the first
// handled to the last, and the CPU of this process (process.cpuUsage: fetch, decode, map, encode, HTTP) per event.
// The sink reads every body and parses every batch, and counts events (it must count every record); the CPU of
// the sink process and of the whole machine over the same span shows which of them was the limit.
//
//   npm run bench:batches [-- --records 60000 --batch 100 --consumers 1 --only single|batches]
import { loadavg } from 'node:os'
import { parseArgs } from 'node:util'
import { BATCH_DEFAULTS } from '../src/api/index.ts'
import { Deliverer, resolveDeliveryPolicy } from '../src/delivery/index.ts'
import type { DeliveryTarget } from '../src/delivery/index.ts'
import { SourceRunner, batchDelivery, recordToEvent } from '../src/kafka-source/index.ts'
import type { Batching, Deliver, Outcome, SourceRecord } from '../src/kafka-source/index.ts'
import {
  PARTITIONS,
  RECORD_BYTES,
  cpuWindow,
  deleteTopic,
  fillTopic,
  machine,
  sleep,
  startKafka,
  startSink
} from './kafka-source-harness.ts'

const { values } = parseArgs({
  options: {
    records: { type: 'string', default: '60000' },
    batch: { type: 'string', default: '100' },
    consumers: { type: 'string', default: '1' },
    /** Which deliveries to measure (both by default): `single`, `batches`. */
    only: { type: 'string' },
    /** Give up on a mode after this long (the whole run stays within about 3 minutes). */
    'limit-seconds': { type: 'string', default: '70' }
  }
})
const records = Number(values.records)
const batchSize = Number(values.batch)
const consumers = Number(values.consumers)
const limitMs = Number(values['limit-seconds']) * 1000

/** With --cpu-prof: each mode's span in the profile's clock (µs), to split the profile by mode. */
const profiling = process.execArgv.some(arg => arg.startsWith('--cpu-prof'))

const fmt = (n: number) => Math.round(n).toLocaleString('en-US')
const log = (line: string) => process.stderr.write(`${line}\n`)

interface Run {
  readonly name: string
  readonly events: number
  readonly requests: number
  readonly seconds: number
  readonly cpuMicros: number
  /** Sink and whole-machine CPU over the same span, in cores. */
  readonly sinkCores: number
  readonly machineCores: number
}

const kafka = await startKafka()
const topic = `bench-batches-${process.pid}`
const sink = await startSink({ countEvents: true })
const deliverer = new Deliverer()
const target: DeliveryTarget = {
  sourceKey: `KafkaSource/default/batches`,
  sink: { uri: sink.url },
  policy: resolveDeliveryPolicy(undefined, undefined)
}
const ref = { namespace: 'default', name: 'batches' }
const runs: Run[] = []
try {
  const produceMs = await fillTopic(kafka.brokers, topic, records)
  log(`produced ${fmt(records)} records of ${RECORD_BYTES} B over ${PARTITIONS} partitions in ${fmt(produceMs)} ms`)
  if (values.only !== 'batches') runs.push(await measure('single events (binary mode)', undefined))
  if (values.only !== 'single') runs.push(await measure(`batches of ${batchSize} (batched mode)`, batchSize))
} finally {
  await deliverer.close()
  await sink.stop()
  await deleteTopic(kafka.brokers, topic)
  await kafka.stop()
}

console.log(
  `\n${machine()}, load average ${loadAverage()}, ${fmt(records)} records of ${RECORD_BYTES} B, ${PARTITIONS} partitions, ${consumers} consumer(s), unordered\n`
)
console.log(
  '| delivery | events/s | requests | CPU µs / event | this process (cores) | sink (cores) | machine (cores) |'
)
console.log('|---|---:|---:|---:|---:|---:|---:|')
for (const r of runs) {
  const cores = (r.cpuMicros / 1e6 / r.seconds).toFixed(2)
  console.log(
    `| ${r.name} | ${fmt(r.events / r.seconds)} | ${fmt(r.requests)} | ${(r.cpuMicros / r.events).toFixed(1)} | ${cores} | ${r.sinkCores.toFixed(2)} | ${r.machineCores.toFixed(2)} |`
  )
}
const [single, batched] = runs
if (single !== undefined && batched !== undefined) {
  const rate = batched.events / batched.seconds / (single.events / single.seconds)
  const cpu = single.cpuMicros / single.events / (batched.cpuMicros / batched.events)
  console.log(
    `\nbatches / single events: ${rate.toFixed(1)}× events/s (goal ≥ 5×), ${cpu.toFixed(1)}× less CPU per event`
  )
}

function loadAverage(): string {
  return loadavg()
    .map(n => n.toFixed(1))
    .join(' / ')
}

/** Delivers the whole topic under a fresh group, one event per request or in batches of `batch`. */
async function measure(name: string, batch: number | undefined): Promise<Run> {
  await sink.stats(true)
  let handled = 0
  let first: { at: number; cpu: NodeJS.CpuUsage; others: ReturnType<typeof cpuWindow> } | undefined
  let last = { at: 0, cpu: process.cpuUsage(), others: {} as Readonly<Record<string, number>> }
  const stop = () => {
    const at = performance.now()
    return { at, cpu: process.cpuUsage(), others: first?.others((at - first.at) / 1000).seconds ?? {} }
  }
  const count = (n: number): void => {
    if (first === undefined) {
      first = { at: performance.now(), cpu: process.cpuUsage(), others: cpuWindow({ sink: sink.pid }) }
      if (profiling) log(`${name}: profile from ${process.hrtime.bigint() / 1000n} µs`)
    }
    handled += n
    if (handled >= records) {
      last = stop()
      if (profiling) log(`${name}: profile to ${process.hrtime.bigint() / 1000n} µs`)
    }
  }
  const deliver: Deliver = async (record: SourceRecord, signal, wireSignal): Promise<Outcome> => {
    const mapped = recordToEvent(record, ref)
    if (mapped.kind !== 'event') throw new Error('a poison record in the benchmark topic')
    const outcome = await deliverer.deliver(mapped.event, target, signal, wireSignal, record.fetchedAt)
    if (outcome.kind === 'aborted') throw new Error('aborted')
    count(1)
    return outcome.kind
  }
  const send = batchDelivery(deliverer, ref, {})
  const batching: Batching | undefined =
    batch === undefined
      ? undefined
      : {
          limits: { maxEvents: batch, maxBytes: BATCH_DEFAULTS.maxBytes, maxWaitMs: BATCH_DEFAULTS.maxWaitMs },
          deliver: async (batchRecords, signal, wireSignal) => {
            const outcomes = await send(batchRecords, signal, wireSignal, target)
            count(batchRecords.length)
            return outcomes
          }
        }
  const group = `${topic}-${batch ?? 1}`
  const runner = new SourceRunner({
    brokers: kafka.brokers,
    source: {
      key: `KafkaSource/default/${group}`,
      groupId: group,
      topics: [topic],
      initialOffset: 'earliest',
      ordering: 'unordered'
    },
    vreplicas: consumers,
    dispatcherId: 'bench',
    deliver,
    ...(batching === undefined ? {} : { batching })
  })
  const started = performance.now()
  try {
    while (handled < records && performance.now() - started < limitMs) await sleep(50)
  } finally {
    await runner.close({ drainMs: 1_000, leaveGroup: true })
  }
  if (handled < records) {
    last = stop()
    log(`${name}: only ${fmt(handled)} of ${fmt(records)} events within ${limitMs / 1000} s`)
  }
  const from = first ?? last
  const cpuMicros = last.cpu.user + last.cpu.system - (from.cpu.user + from.cpu.system)
  const seconds = (last.at - from.at) / 1000
  const others = last.others
  const stats = await sink.stats()
  log(`${name}: ${fmt(handled)} events in ${seconds.toFixed(1)} s, ${fmt(stats.count)} requests`)
  // The sink's own count is the truth the handled count is checked against.
  if (stats.events < handled) log(`${name}: the sink counted only ${fmt(stats.events)} events of ${fmt(handled)}`)
  return {
    name,
    events: handled,
    requests: stats.count,
    seconds,
    cpuMicros,
    sinkCores: (others['sink'] ?? 0) / seconds,
    machineCores: (others['machine'] ?? 0) / seconds
  }
}
