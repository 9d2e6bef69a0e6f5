// Adaptive per-sink flow control: one sink slows from 10 ms to 2 s and answers 503, beside four healthy 10 ms
// sinks, all five served by one Deliverer (one dispatcher's delivery path), each source with
// `delivery.shoal.dev/adaptive-concurrency: "true"`. Drives the Deliverer in-process, without Kafka: each source
// is a member model with a window of `--window` records in flight, fed at `--rate` events/s; when the window is
// full the source stops taking events (its backlog is lag, as a member stops fetching). The sinks run in a child
// process, so their work is not on the deliverer's event loop.
//
// Run 1 ("alone"): the four healthy sinks only. Run 2 ("beside"): the same plus the fifth sink, fast for the
// first phase, slow and answering 503 for the second, fast again for the third. Reports, per phase, the healthy
// sinks' delivered events/s and p99 latency (deliver() called → outcome), as ratios of run 2 to run 1; the slow
// sink's largest queue at its gate, its limit, its backlog; and that every event was delivered exactly as sent.
//
//   npm run bench:adaptive-limit [-- --phase-s 20 --rate 300 --window 200]
import { fork } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { cpus, loadavg } from 'node:os'
import { parseArgs } from 'node:util'
import type { CloudEvent, DeliveryTarget } from '../src/delivery/index.ts'
import { Deliverer, resolveDeliveryPolicy } from '../src/delivery/index.ts'

const { values } = parseArgs({
  options: {
    'serve-sinks': { type: 'boolean', default: false },
    'phase-s': { type: 'string', default: '20' },
    rate: { type: 'string', default: '300' },
    window: { type: 'string', default: '200' }
  }
})

type Mode = 'fast' | 'slow'

if (values['serve-sinks']) await serveSinks()
else await main()

// The child: five sinks; sink 4 answers as the parent sets its mode. Each records the ids it accepted.
async function serveSinks(): Promise<void> {
  let mode: Mode = 'fast'
  const accepted = Array.from({ length: 5 }, () => new Set<string>())
  const ports: number[] = []
  for (let i = 0; i < 5; i++) {
    const server = createServer((req, res) => {
      req.resume()
      req.on('end', () => {
        const slow = i === 4 && mode === 'slow'
        setTimeout(
          () => {
            if (slow) {
              res.writeHead(503, { 'retry-after': '1' }).end()
              return
            }
            accepted[i]!.add(String(req.headers['ce-id']))
            res.writeHead(202).end()
          },
          slow ? 2000 : 10
        )
      })
    })
    server.keepAliveTimeout = 60_000
    server.listen(0, '127.0.0.1')
    await new Promise(resolve => server.once('listening', resolve))
    ports.push((server.address() as AddressInfo).port)
  }
  process.on('message', (message: { mode?: Mode; count?: boolean }) => {
    if (message.mode !== undefined) mode = message.mode
    if (message.count === true) process.send?.({ accepted: accepted.map(s => s.size) })
  })
  process.send?.({ ports })
}

interface Source {
  readonly index: number
  readonly target: DeliveryTarget
  inFlight: number
  backlog: number
  issued: number
  delivered: number
  other: number
  // Per phase: latencies (ms) of the deliveries that ended in it.
  latencies: number[][]
  maxQueued: number
  minLimit: number
  maxBacklog: number
}

async function main(): Promise<void> {
  const phaseMs = Number(values['phase-s']) * 1000
  const rate = Number(values.rate)
  const window = Number(values.window)
  const log = (line: string): void => void process.stderr.write(`${line}\n`)
  log(
    `machine: ${cpus().length} cores, load average ${loadavg()
      .map(l => l.toFixed(2))
      .join(' ')}`
  )
  const alone = await run(4, phaseMs, rate, window, log)
  const beside = await run(5, phaseMs, rate, window, log)
  const phases = ['before', 'during', 'after']
  const rows: string[] = []
  for (let p = 0; p < 3; p++) {
    const a = alone.healthy[p]!
    const b = beside.healthy[p]!
    rows.push(
      `| ${phases[p]} | ${a.rate.toFixed(0)} | ${b.rate.toFixed(0)} | ${(b.rate / a.rate).toFixed(3)} | ${a.p99.toFixed(1)} | ${b.p99.toFixed(1)} | ${(b.p99 / a.p99).toFixed(2)} |`
    )
  }
  const slow = beside.slow!
  console.log(
    `machine: ${cpus().length} cores, load average at the end ${loadavg()
      .map(l => l.toFixed(2))
      .join(' ')}`
  )
  console.log(`phases of ${phaseMs / 1000} s; ${rate} events/s offered per source; window ${window} per source`)
  console.log('| phase | healthy events/s alone | beside the slow sink | ratio | p99 ms alone | beside | ratio |')
  console.log('|---|---|---|---|---|---|---|')
  for (const row of rows) console.log(row)
  console.log(
    `slow sink: issued ${slow.issued}, delivered ${slow.delivered}, other outcomes ${slow.other}; largest gate queue ${slow.maxQueued} (window ${window}); lowest limit ${slow.minLimit}; largest backlog (lag) ${slow.maxBacklog}`
  )
  console.log(`nothing lost: ${alone.lost === 0 && beside.lost === 0} (alone ${alone.lost}, beside ${beside.lost})`)
}

interface RunResult {
  readonly healthy: { readonly rate: number; readonly p99: number }[]
  readonly slow: Source | undefined
  readonly lost: number
}

async function run(
  sinks: number,
  phaseMs: number,
  rate: number,
  window: number,
  log: (line: string) => void
): Promise<RunResult> {
  const child = fork(new URL(import.meta.url), ['--serve-sinks'], { execArgv: process.execArgv })
  const ports = await new Promise<number[]>(resolve =>
    child.once('message', (m: { ports: number[] }) => resolve(m.ports))
  )
  const deliverer = new Deliverer()
  const policy = resolveDeliveryPolicy({ retry: 1000, backoffPolicy: 'exponential', backoffDelay: 'PT0.2S' })
  const sources: Source[] = Array.from({ length: sinks }, (_, i) => ({
    index: i,
    target: {
      sourceKey: `KafkaSource/bench/s${i}`,
      sink: { uri: `http://127.0.0.1:${ports[i]}/` },
      // Backoff capped: a retry waits at most 1.6 s, so the after phase drains within the run.
      policy: { ...policy, retry: 1000, backoffPolicy: 'linear', backoffDelayMs: 400 },
      flow: { adaptive: true }
    },
    inFlight: 0,
    backlog: 0,
    issued: 0,
    delivered: 0,
    other: 0,
    latencies: [[], [], []],
    maxQueued: 0,
    minLimit: Number.POSITIVE_INFINITY,
    maxBacklog: 0
  }))
  let phase = 0
  const started = performance.now()
  const issue = (source: Source): void => {
    source.inFlight++
    const id = `${source.index}-${source.issued++}`
    const event: CloudEvent = {
      attributes: { specversion: '1.0', id, source: '/bench', type: 'bench' },
      extensions: {},
      data: Buffer.alloc(256, 97)
    }
    const t0 = performance.now()
    void deliverer.deliver(event, source.target).then(outcome => {
      source.inFlight--
      if (outcome.kind === 'delivered') source.delivered++
      else source.other++
      source.latencies[phase]!.push(performance.now() - t0)
      if (source.backlog > 0 && source.inFlight < window) {
        source.backlog--
        issue(source)
      }
    })
  }
  // Offered load: `rate` events/s per source by the clock (a late tick catches up); past the window, backlog.
  let offered = 0
  const ticker = setInterval(() => {
    const n = Math.floor((rate * (performance.now() - started)) / 1000) - offered
    offered += n
    for (const source of sources) {
      for (let k = 0; k < n; k++) {
        if (source.inFlight < window && source.backlog === 0) issue(source)
        else source.backlog++
      }
      source.maxBacklog = Math.max(source.maxBacklog, source.backlog)
    }
    for (const state of deliverer.flow()) {
      const source = sources.find(s => s.target.sourceKey === state.sourceKey)!
      source.maxQueued = Math.max(source.maxQueued, state.queued)
      source.minLimit = Math.min(source.minLimit, state.limit)
    }
  }, 10)
  const setMode = (mode: Mode): void => void child.send({ mode })
  await sleep(phaseMs)
  phase = 1
  if (sinks === 5) setMode('slow')
  await sleep(phaseMs)
  phase = 2
  if (sinks === 5) setMode('fast')
  await sleep(phaseMs)
  clearInterval(ticker)
  // Drain: every event issued or in backlog must end delivered.
  const drainUntil = performance.now() + 60_000
  while (sources.some(s => s.inFlight > 0 || s.backlog > 0) && performance.now() < drainUntil) {
    for (const s of sources)
      while (s.backlog > 0 && s.inFlight < window) {
        s.backlog--
        issue(s)
      }
    await sleep(100)
  }
  const accepted = await new Promise<number[]>(resolve => {
    child.once('message', (m: { accepted: number[] }) => resolve(m.accepted))
    child.send({ count: true })
  })
  await deliverer.close()
  await stop(child)
  const lost = sources.reduce(
    (n, s) => n + (s.issued - s.delivered) + s.backlog + (s.issued - (accepted[s.index] ?? 0)),
    0
  )
  log(
    `run with ${sinks} sinks: ${((performance.now() - started) / 1000).toFixed(1)} s, issued ${sources.map(s => s.issued).join('/')}, accepted ${accepted.join('/')}`
  )
  const healthy = [0, 1, 2].map(p => {
    const all = sources.slice(0, 4).flatMap(s => s.latencies[p]!)
    return { rate: all.length / 4 / (phaseMs / 1000), p99: percentile(all, 0.99) }
  })
  return { healthy, slow: sinks === 5 ? sources[4] : undefined, lost }
}

function percentile(values: number[], q: number): number {
  if (values.length === 0) return Number.NaN
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!
}

function sleep(ms: number): Promise<void> {
  return new Promise(resolve => setTimeout(resolve, ms))
}

async function stop(child: ChildProcess): Promise<void> {
  const exited = new Promise(resolve => child.once('exit', resolve))
  child.kill()
  await exited
}
