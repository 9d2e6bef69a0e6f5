// PingSource through pool churn (issue 13): is every second of every schedule fired, and once, while the pool of
// dispatchers is cordoned, loses a member to SIGKILL and gains one? One broker (embedded, or
// KAFKA_BOOTSTRAP_SERVERS), one `shoal controller`, three `shoal dispatcher` processes (zones a, b, c,
// `--capacity 10`), N PingSources with `schedule: "* * * * * *"` (every second) created through the API, all to one
// sink that records each event's `ce-time` (the nominal tick), `ce-shoallate`
// and when it arrived.
//
// Timeline, in seconds from t0 = the moment the last source was created: at --cordon-at `shoal cordon
// dispatcher-0`; at --kill-at SIGKILL dispatcher-1; at --rejoin-at `shoal uncordon dispatcher-0` and a new
// `dispatcher-3` (zone a, node a-2) starts; at --end-at the sink stops counting (later arrivals are ignored) and
// everything is stopped. Each dispatcher gets `--schedule-capacity` max(1000, N) (default) so that one dispatcher
// alone — between the kill and the rejoin only dispatcher-2 is schedulable — can hold every source.
//
// Counted per source, per nominal second:
// - never delivered: a nominal second in [created + 2 s, end − 3 s] (created = the source's creationTimestamp,
//   rounded up to the whole second; end = t0 + --end-at) with no event at all, not even a late one;
// - delivered twice: a nominal second (any, received before the end) with two or more events;
// - late: events marked `ce-shoallate: true`, and their lateness = arrival − nominal time.
// Split by phase (before the cordon, cordon → kill, kill → rejoin, rejoin → end): missing seconds by the phase
// their nominal second falls in; seconds delivered twice and late ticks by the phase the second copy (the late
// tick) arrived in — a tick fired again by a new owner after the kill is the kill's, whatever its nominal second.
//
//   npm run bench:ping-churn [-- --sources 30 --rounds 1 --cordon-at 20 --kill-at 40 --rejoin-at 60 --end-at 90
//     --schedule-capacity N --create-concurrency 4 --out DIR --sink node|python --sink-delay-ms 0]
//
// --sink python: the sink is test/sinks/python_sink.py (the CloudEvents SDK over Python's ThreadingHTTPServer,
// listen backlog 5), one for all sources (each event's `source` names it); --sink-delay-ms: the sink answers after
// that long (a slow sink: a tick is in flight for that long).
import { execFile } from 'node:child_process'
import { mkdirSync, writeFileSync } from 'node:fs'
import { loadavg } from 'node:os'
import { parseArgs, promisify } from 'node:util'
import { TickSink } from '../test/helpers/ticks.ts'
import type { TickArrival } from '../test/helpers/ticks.ts'
import { machine, sinkKindOf, sleep, startKafka, startShoalProcess } from './kafka-source-harness.ts'
import type { ShoalProcess } from './kafka-source-harness.ts'

const { values } = parseArgs({
  options: {
    sources: { type: 'string', default: '30' },
    rounds: { type: 'string', default: '1' },
    'cordon-at': { type: 'string', default: '20' },
    'kill-at': { type: 'string', default: '40' },
    'rejoin-at': { type: 'string', default: '60' },
    'end-at': { type: 'string', default: '90' },
    'schedule-capacity': { type: 'string' },
    'create-concurrency': { type: 'string', default: '4' },
    /** A directory for each run's raw arrivals and report (none by default). */
    out: { type: 'string' },
    sink: { type: 'string', default: 'node' },
    'sink-delay-ms': { type: 'string', default: '0' }
  }
})
const sinkKind = sinkKindOf(values.sink)
const sinkDelayMs = Number(values['sink-delay-ms'])
const sources = Number(values.sources)
const rounds = Number(values.rounds)
const cordonAt = Number(values['cordon-at'])
const killAt = Number(values['kill-at'])
const rejoinAt = Number(values['rejoin-at'])
const endAt = Number(values['end-at'])
const scheduleCapacity = Number(values['schedule-capacity'] ?? Math.max(1000, sources))
const createConcurrency = Number(values['create-concurrency'])
if (!(cordonAt < killAt && killAt < rejoinAt && rejoinAt < endAt)) throw new Error('the timeline is out of order')

const bin = new URL('../bin/shoal.js', import.meta.url).pathname
const run = promisify(execFile)
const PINGSOURCES = '/apis/sources.knative.dev/v1/namespaces/default/pingsources'
const PHASES = ['before cordon', 'cordon → kill', 'kill → rejoin', 'rejoin → end'] as const

interface ApiObject {
  readonly metadata: { readonly name: string; readonly creationTimestamp: string }
  readonly status?: { readonly placements?: ReadonlyArray<{ readonly podName?: string }> }
}
interface ApiBody {
  readonly metadata?: ApiObject['metadata']
  readonly items?: readonly ApiObject[]
}

type Arrival = Pick<TickArrival, 'nominalMs' | 'atMs' | 'late'>

interface SourceResult {
  readonly name: string
  readonly events: number
  /** Seconds from t0. */
  readonly missing: number[]
  readonly twice: number[]
  readonly placedBeforeKill: string
}

interface RunResult {
  readonly run: number
  readonly sources: number
  readonly events: number
  readonly window: string
  readonly missing: number
  readonly twice: number
  readonly twicePercentOfEvents: number
  readonly extraDeliveries: number
  readonly late: number
  readonly lateP50Ms: number | null
  readonly lateP99Ms: number | null
  readonly lateMaxMs: number | null
  readonly onTimeP99Ms: number | null
  readonly missingByPhase: Record<string, number>
  readonly twiceByPhase: Record<string, number>
  readonly lateByPhase: Record<string, number>
  readonly sourcesWithMissing: number
  readonly sourcesWithTwice: number
  readonly createSeconds: number
  readonly worst: string[]
  readonly timeline: string[]
  readonly loadAverage: string
}

const percentile = (sorted: readonly number[], p: number): number | null =>
  sorted.length === 0 ? null : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!

function ranges(xs: readonly number[]): string {
  const out: string[] = []
  for (let i = 0; i < xs.length;) {
    let j = i
    while (j + 1 < xs.length && xs[j + 1] === xs[j]! + 1) j++
    out.push(i === j ? `${xs[i]}` : `${xs[i]}–${xs[j]}`)
    i = j + 1
  }
  return out.join(',')
}

const phaseOf = (second: number) =>
  PHASES[second < cordonAt ? 0 : second < killAt ? 1 : second < rejoinAt ? 2 : 3] as string

async function api(method: string, url: string, body?: string): Promise<{ status: number; body: ApiBody }> {
  const response = await fetch(url, {
    method,
    ...(body === undefined ? {} : { headers: { 'content-type': 'application/yaml' }, body })
  })
  const text = await response.text()
  return { status: response.status, body: (text === '' ? {} : JSON.parse(text)) as ApiBody }
}

async function runOnce(brokers: readonly string[], round: number): Promise<RunResult> {
  // The sink: every event, per source, as it arrives (the tests' TickSink: Node's server, or with --sink python the
  // Python standard-library one, which names a source by its event's `source`). Counted until the end.
  const sink = await new TickSink().start('127.0.0.1', { python: sinkKind === 'python', delayMs: sinkDelayMs })
  let countedUntil = Number.POSITIVE_INFINITY
  const arrivalsOf = (name: string): readonly Arrival[] => sink.arrivals(name).filter(a => a.atMs <= countedUntil)

  const kafka = brokers.join(',')
  const prefix = `bench-ping-churn-${Date.now()}-${round}`
  const started: Array<{ id: string; process: ShoalProcess }> = []
  const controller = await startShoalProcess(
    ['controller', '--kafka', kafka, '--port', '0', '--prefix', prefix, '--buckets', '4'],
    /serving the API on \S+/
  )
  const url = /serving the API on (\S+)/.exec(controller.line)![1]!
  const startDispatcher = async (index: number, zone: string, node: string) => {
    const child = await startShoalProcess(
      [
        ...['dispatcher', '--kafka', kafka, '--prefix', prefix, '--id', `dispatcher-${index}`],
        ...['--zone', zone, '--node', node, '--capacity', '10', '--schedule-capacity', String(scheduleCapacity)]
      ],
      / up\b/
    )
    started.push({ id: `dispatcher-${index}`, process: child })
    return child
  }
  const timeline: string[] = []
  let t0 = Date.now()
  const note = (what: string) => {
    const line = `${((Date.now() - t0) / 1000).toFixed(1)} s ${what}`
    timeline.push(line)
    process.stderr.write(`  ${line}\n`)
  }
  try {
    for (const [i, zone] of ['a', 'b', 'c'].entries()) await startDispatcher(i, zone, `${zone}-1`)

    // The sources, through the API.
    const created = new Map<string, number>()
    const createStart = Date.now()
    let next = 0
    await Promise.all(
      Array.from({ length: createConcurrency }, async () => {
        while (next < sources) {
          const name = `churn-${next++}`
          const manifest = [
            'apiVersion: sources.knative.dev/v1',
            'kind: PingSource',
            `metadata: {name: ${name}}`,
            'spec:',
            '  schedule: "* * * * * *"',
            `  sink: {uri: "${sink.url(name)}"}`,
            ''
          ].join('\n')
          const response = await api('POST', `${url}${PINGSOURCES}`, manifest)
          if (response.status !== 201) throw new Error(`creating ${name}: ${response.status}`)
          created.set(name, Date.parse(response.body.metadata!.creationTimestamp))
        }
      })
    )
    t0 = Date.now()
    const createSeconds = (t0 - createStart) / 1000
    note(`${sources} sources created in ${createSeconds.toFixed(1)} s (t0)`)

    const placements = async (): Promise<Record<string, string>> => {
      const list = (await api('GET', `${url}${PINGSOURCES}`)).body.items ?? []
      return Object.fromEntries(list.map(s => [s.metadata.name, s.status?.placements?.[0]?.podName ?? '-']))
    }
    const spread = (p: Record<string, string>) => {
      const counts = new Map<string, number>()
      for (const d of Object.values(p)) counts.set(d, (counts.get(d) ?? 0) + 1)
      return [...counts]
        .sort()
        .map(([d, n]) => `${d} ${n}`)
        .join(', ')
    }
    const until = (s: number) => sleep(Math.max(0, t0 + s * 1000 - Date.now()))

    await until(cordonAt - 1)
    note(`placements: ${spread(await placements())}`)
    await until(cordonAt)
    await run(process.execPath, [bin, 'cordon', 'dispatcher-0', '--server', url])
    note('shoal cordon dispatcher-0')
    await until(killAt - 1)
    const beforeKill = await placements()
    note(`placements: ${spread(beforeKill)}`)
    await until(killAt)
    process.kill(started[1]!.process.pid, 'SIGKILL')
    note('SIGKILL dispatcher-1')
    await until(rejoinAt - 1)
    note(`placements: ${spread(await placements())}`)
    await until(rejoinAt)
    await run(process.execPath, [bin, 'uncordon', 'dispatcher-0', '--server', url])
    note('shoal uncordon dispatcher-0')
    await startDispatcher(3, 'a', 'a-2')
    note('dispatcher-3 up')
    await until(endAt - 2)
    note(`placements: ${spread(await placements())}`)
    await until(endAt)
    countedUntil = Date.now()
    const end = t0 + endAt * 1000
    note('end: counting stopped')

    // Counting.
    const lastCounted = Math.floor((end - 3000) / 1000) * 1000
    const perSource: SourceResult[] = []
    const lateness: number[] = []
    const onTime: number[] = []
    let events = 0
    let extraDeliveries = 0
    const missingByPhase: Record<string, number> = Object.fromEntries(PHASES.map(p => [p, 0]))
    const twiceByPhase: Record<string, number> = Object.fromEntries(PHASES.map(p => [p, 0]))
    const lateByPhase: Record<string, number> = Object.fromEntries(PHASES.map(p => [p, 0]))
    const rel = (ms: number) => Math.round((ms - t0) / 1000)
    for (const [name, createdMs] of created) {
      const mine = arrivalsOf(name)
      events += mine.length
      const seen = new Map<number, number>()
      for (const a of mine) {
        const n = (seen.get(a.nominalMs) ?? 0) + 1
        seen.set(a.nominalMs, n)
        if (n === 2) twiceByPhase[phaseOf((a.atMs - t0) / 1000)]!++
        if (a.late) lateByPhase[phaseOf((a.atMs - t0) / 1000)]!++
        ;(a.late ? lateness : onTime).push(a.atMs - a.nominalMs)
      }
      const missing: number[] = []
      for (let s = Math.ceil((createdMs + 2000) / 1000) * 1000; s <= lastCounted; s += 1000) {
        if (!seen.has(s)) missing.push(rel(s))
      }
      const twice = [...seen]
        .filter(([, n]) => n > 1)
        .map(([s, n]) => ((extraDeliveries += n - 1), rel(s)))
        .sort((a, b) => a - b)
      for (const s of missing) missingByPhase[phaseOf(s)]!++
      perSource.push({ name, events: mine.length, missing, twice, placedBeforeKill: beforeKill[name] ?? '-' })
    }
    lateness.sort((a, b) => a - b)
    onTime.sort((a, b) => a - b)
    const missing = perSource.reduce((n, s) => n + s.missing.length, 0)
    const twice = perSource.reduce((n, s) => n + s.twice.length, 0)
    const worst = [...perSource]
      .sort((a, b) => b.missing.length - a.missing.length || b.twice.length - a.twice.length)
      .filter(s => s.missing.length + s.twice.length > 0)
      .slice(0, 5)
      .map(
        s =>
          `${s.name} (on ${s.placedBeforeKill} before the kill): ${s.events} events, missing [${ranges(s.missing)}], ` +
          `twice [${ranges(s.twice)}]`
      )
    const result: RunResult = {
      run: round,
      sources,
      events,
      window: `nominal seconds in [created + 2 s, end − 3 s] = up to t0 + ${endAt - 3} s`,
      missing,
      twice,
      twicePercentOfEvents: events === 0 ? 0 : Math.round((twice / events) * 1000) / 10,
      extraDeliveries,
      late: lateness.length,
      lateP50Ms: percentile(lateness, 50),
      lateP99Ms: percentile(lateness, 99),
      lateMaxMs: lateness.at(-1) ?? null,
      onTimeP99Ms: percentile(onTime, 99),
      missingByPhase,
      twiceByPhase,
      lateByPhase,
      sourcesWithMissing: perSource.filter(s => s.missing.length > 0).length,
      sourcesWithTwice: perSource.filter(s => s.twice.length > 0).length,
      createSeconds,
      worst,
      timeline,
      loadAverage: loadavg()
        .map(l => l.toFixed(1))
        .join(' ')
    }
    if (values.out !== undefined) {
      const dir = `${values.out}/run-${round}`
      mkdirSync(dir, { recursive: true })
      writeFileSync(`${dir}/report.json`, JSON.stringify({ ...result, perSource }, null, 1))
      writeFileSync(
        `${dir}/arrivals.json`,
        JSON.stringify({
          t0,
          created: Object.fromEntries(created),
          arrivals: Object.fromEntries([...created.keys()].map(name => [name, arrivalsOf(name)]))
        })
      )
    }
    return result
  } finally {
    countedUntil = Math.min(countedUntil, Date.now())
    await Promise.all(started.map(d => d.process.stop()))
    await controller.stop()
    await sink.close()
  }
}

const fmt = (n: number | null) => (n === null ? '—' : n.toLocaleString('en-US'))
const kafka = await startKafka()
const results: RunResult[] = []
try {
  for (let round = 1; round <= rounds; round++) {
    process.stderr.write(`run ${round}: ${sources} sources\n`)
    const result = await runOnce(kafka.brokers, round)
    results.push(result)
    console.log(JSON.stringify(result))
  }
} finally {
  await kafka.stop()
}

console.log(
  `\n${machine()}; ${sinkKind} sink answering after ${sinkDelayMs} ms; ${sources} sources; cordon ${cordonAt} s, SIGKILL ${killAt} s, uncordon + dispatcher-3 ${rejoinAt} s, ` +
    `end ${endAt} s; missing counted over nominal seconds in [created + 2 s, end − 3 s]\n`
)
console.log(
  '| run | sources | events | seconds never delivered | seconds delivered twice (% of events) | late ticks | ' +
    'late p50 / p99 / max | missing (by nominal second) | twice (by arrival) | late (by arrival) |'
)
console.log('|---|---:|---:|---:|---:|---:|---|---|---|---|')
const byPhase = (r: Record<string, number>) => PHASES.map(p => r[p]).join(' / ')
for (const r of results) {
  console.log(
    `| ${r.run} | ${fmt(r.sources)} | ${fmt(r.events)} | ${fmt(r.missing)} (${r.sourcesWithMissing} sources) | ` +
      `${fmt(r.twice)} (${r.twicePercentOfEvents} %) | ${fmt(r.late)} | ` +
      `${fmt(r.lateP50Ms)} / ${fmt(r.lateP99Ms)} / ${fmt(r.lateMaxMs)} ms | ${byPhase(r.missingByPhase)} | ` +
      `${byPhase(r.twiceByPhase)} | ${byPhase(r.lateByPhase)} |`
  )
}
console.log(`\nphases: ${PHASES.join(' / ')}`)
for (const r of results) {
  console.log(`\nrun ${r.run} worst sources (seconds from t0):`)
  for (const w of r.worst) console.log(`- ${w}`)
}
