// KafkaSource duplicates under a slow sink (issue 4): 1 KiB records on a 12-partition topic, delivered unordered
// by one `shoal dispatcher` process to a sink that answers 202 after 3 s, counting distinct `ce-id`s and
// duplicates at the sink. Two runs side by side, each with its own topic, sink (so its own per-origin connection
// cap) and consumer group: *steady*, two vreplicas throughout; *scaled*, two vreplicas scaled to 6 and back to 2
// through the API (`shoal scale`) as its sink passes given counts. Group rebalances are read from the embedded
// broker's log (its group coordinator logs each one) and attributed to the start, a scale step or nothing.
//
//   npm run bench:kafka-source-duplicates [-- --records 10000 --delay-ms 3000 --up-at 0.25 --down-at 0.6]
import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { promisify } from 'node:util'
import { parseArgs } from 'node:util'
import { DELIVERER_DEFAULTS } from '../src/delivery/index.ts'
import { startEmbeddedKafka } from '../src/kafka/embedded/index.ts'
import { DEFAULT_MAX_IN_FLIGHT } from '../src/kafka-source/index.ts'
import {
  PARTITIONS,
  RECORD_BYTES,
  deleteTopic,
  fillTopic,
  machine,
  sleep,
  startShoal,
  startSink
} from './kafka-source-harness.ts'
import type { Shoal, Sink, SinkStats } from './kafka-source-harness.ts'

const { values } = parseArgs({
  options: {
    records: { type: 'string', default: '10000' },
    'delay-ms': { type: 'string', default: '3000' },
    /** Scale 2 → 6 when the scaled run's sink has this share of the records, 6 → 2 at the second. */
    'up-at': { type: 'string', default: '0.25' },
    'down-at': { type: 'string', default: '0.6' },
    /** Give up this long after the sources are created. */
    'limit-s': { type: 'string', default: '420' }
  }
})
const records = Number(values.records)
const delayMs = Number(values['delay-ms'])
const upAt = Math.round(records * Number(values['up-at']))
const downAt = Math.round(records * Number(values['down-at']))
const limitMs = Number(values['limit-s']) * 1000

const bin = new URL('../bin/shoal.js', import.meta.url).pathname
const run = promisify(execFile)
const fmt = (n: number) => Math.round(n).toLocaleString('en-US')
const log = (line: string) => process.stderr.write(`${line}\n`)
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`

/** One run: a topic, a sink, a source; what its sink counted at each phase boundary. */
interface Run {
  readonly name: string
  readonly topic: string
  readonly sink: Sink
  group: string
  created: number
  /** Milliseconds from create to the last distinct record, once all arrived. */
  doneMs: number | undefined
  final: SinkStats | undefined
  /** Phase boundaries: name, time (ms since this process started), sink stats then. */
  readonly marks: { phase: string; at: number; stats: SinkStats }[]
}

// A broker of our own, so its group coordinator's log can be read.
const kafka = await startEmbeddedKafka({ port: 0 })
const brokers = [...kafka.bootstrapBrokers]
const brokerLog = kafka.brokers[0]!.logFile
const runs: Run[] = []
let shoal: Shoal | undefined
const rebalanceLines: { at: number; line: string }[] = []
try {
  for (const name of ['steady', 'scaled']) {
    const topic = `bench-ksd-${name}-${process.pid}`
    const sink = await startSink({ delayMs, countIds: true })
    runs.push({ name, topic, sink, group: '', created: 0, doneMs: undefined, final: undefined, marks: [] })
    const produceMs = await fillTopic(brokers, topic, records)
    log(
      `${name}: produced ${fmt(records)} records of ${RECORD_BYTES} B over ${PARTITIONS} partitions in ${fmt(produceMs)} ms`
    )
  }
  shoal = await startShoal(brokers, `bench-ksd-${process.pid}`)
  for (const r of runs) {
    r.created = performance.now()
    await shoal.createSource({ name: r.name, topic: r.topic, sink: r.sink.url, consumers: 2, ordering: 'unordered' })
    r.group = await consumerGroup(shoal.api, r.name)
    r.marks.push({ phase: 'at 2', at: performance.now(), stats: await r.sink.stats() })
  }
  const [steady, scaled] = runs as [Run, Run]
  let step = 0
  for (;;) {
    for (const r of runs) {
      const stats = await r.sink.stats()
      if (r.doneMs === undefined && stats.unique >= records) {
        r.doneMs = performance.now() - r.created
        log(`${r.name}: all ${fmt(records)} records at the sink ${seconds(r.doneMs)} after create`)
      }
    }
    if (step === 0 || step === 1) {
      const stats = await scaled.sink.stats()
      const [threshold, consumers] = step === 0 ? [upAt, 6] : [downAt, 2]
      if (stats.unique >= threshold) {
        scaled.marks.push({ phase: `at ${consumers}`, at: performance.now(), stats })
        await scale(shoal.api, scaled.name, consumers)
        log(
          `scaled: ${step === 0 ? '2 → 6' : '6 → 2'} at ${fmt(stats.unique)} distinct records, ${seconds(performance.now() - scaled.created)} after create`
        )
        step++
      }
    }
    if (runs.every(r => r.doneMs !== undefined)) break
    if (performance.now() - steady.created > limitMs) {
      log(`time limit: ${values['limit-s']} s`)
      break
    }
    await sleep(250)
  }
  // Duplicates can trail the last new record (a rebalance after it would deliver again): wait a little longer.
  await sleep(delayMs + 5_000)
  for (const r of runs) r.final = await r.sink.stats()
} finally {
  await shoal?.stop()
  for (const r of runs) {
    await r.sink.stop()
    await deleteTopic(brokers, r.topic)
  }
  rebalanceLines.push(...readLog())
  await kafka.stop()
}

/** The broker log's lines about a group's rebalances, with their time (ms since this process started). */
function readLog(): { at: number; line: string }[] {
  const offset = Date.now() - performance.now()
  return readFileSync(brokerLog, 'utf8')
    .split('\n')
    .filter(line => /Preparing to rebalance group|Stabilized group/.test(line))
    .map(line => {
      const stamp = /^\[(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d),(\d{3})\]/.exec(line)
      const at = stamp ? new Date(`${stamp[1]}T${stamp[2]}.${stamp[3]}`).getTime() - offset : 0
      return { at, line }
    })
}

async function consumerGroup(api: string, name: string): Promise<string> {
  const response = await fetch(`${api}/apis/sources.knative.dev/v1beta1/namespaces/default/kafkasources/${name}`, {
    headers: { accept: 'application/json' }
  })
  const body = (await response.json()) as { spec: { consumerGroup: string } }
  return body.spec.consumerGroup
}

async function scale(api: string, name: string, consumers: number): Promise<void> {
  await run(process.execPath, [bin, 'scale', 'kafkasource', name, '--consumers', String(consumers), '--server', api])
}

// Report.
const lines = [
  `${machine()}, ${fmt(records)} records of ${RECORD_BYTES} B per run, ${PARTITIONS} partitions, unordered, ` +
    `sink answers after ${delayMs} ms; in-flight limit ${DEFAULT_MAX_IN_FLIGHT} per vreplica ` +
    `(DEFAULT_MAX_IN_FLIGHT), at most ${DELIVERER_DEFAULTS.maxConnectionsPerOrigin} requests on the wire per sink ` +
    `origin (the dispatcher's connection cap); both runs side by side on one dispatcher, each with its own sink`,
  '',
  '| run | produced | requests at the sink | distinct | lost | duplicates | duplicates % | duration (create → last record) | events/s | group rebalances (other than start and scale steps) |',
  '|---|---:|---:|---:|---:|---:|---:|---:|---:|---|'
]
const phaseLines: string[] = []
for (const r of runs) {
  const s = r.final!
  const lost = records - s.unique
  const mine = rebalanceLines.filter(l => l.line.includes(`group ${r.group} `))
  const prepared = mine.filter(l => l.line.includes('Preparing to rebalance'))
  // A rebalance belongs to the start or a scale step when it comes within 30 s after it.
  const causes = [
    { phase: 'start', at: r.created },
    ...r.marks.slice(1).map(m => ({ phase: `→ ${m.phase.slice(3)}`, at: m.at }))
  ]
  const attributed = new Map<string, number>()
  let other = 0
  for (const p of prepared) {
    const cause = causes.filter(c => p.at >= c.at - 1_000 && p.at <= c.at + 30_000).at(-1)
    if (cause === undefined) other++
    else attributed.set(cause.phase, (attributed.get(cause.phase) ?? 0) + 1)
  }
  const byCause = [...attributed].map(([phase, n]) => `${phase}: ${n}`).join(', ')
  const duration = r.doneMs === undefined ? 'not finished' : seconds(r.doneMs)
  const rate = r.doneMs === undefined ? '' : fmt((s.unique * 1000) / r.doneMs)
  lines.push(
    `| ${r.name} (${r.name === 'steady' ? '2 vreplicas' : `2 → 6 at ${fmt(upAt)} → 2 at ${fmt(downAt)}`}) | ${fmt(records)} | ${fmt(s.count)} | ${fmt(s.unique)} | ${fmt(lost)} | ${fmt(s.duplicates)} | ${((100 * s.duplicates) / records).toFixed(3)} % | ${duration} | ${rate} | **${other}** (${byCause}) |`
  )
  const bounds = [...r.marks, { phase: 'end', at: performance.now(), stats: s }]
  for (let i = 0; i + 1 < bounds.length; i++) {
    const [a, b] = [bounds[i]!, bounds[i + 1]!]
    phaseLines.push(
      `| ${r.name} | ${a.phase.replace('at ', '')} vreplicas | ${fmt(b.stats.unique - a.stats.unique)} | ${fmt(b.stats.duplicates - a.stats.duplicates)} |`
    )
  }
  for (const l of mine) {
    const what = /(Preparing to rebalance|Stabilized) group \S+ (.*?)( \(org\.apache.*)?$/.exec(l.line)
    log(`${r.name}: ${seconds(l.at - r.created)} after create: ${what?.[1]} ${what?.[2]}`)
  }
}
lines.push(
  '',
  '| run | phase | new records at the sink | duplicates at the sink |',
  '|---|---|---:|---:|',
  ...phaseLines
)
console.log(`\n${lines.join('\n')}`)
