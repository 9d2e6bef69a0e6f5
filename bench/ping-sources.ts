// PingSources at scale: N schedules firing every minute on D dispatchers for M minutes, K of them pointing at a
// sink that answers after two minutes. Each dispatcher is a process running what a dispatcher's PingSource plane
// runs per tick — the ScheduleTable with its one TickTimer, a PingEventBuilder per source, the TickLedger, and
// one shared Deliverer (128 connections per sink origin, a queue per source) — fed by the bench rather than by
// the store (creating 100,000 resources through the API would measure the API). The sinks run in a process of
// their own (bench/ping-sink.ts) and measure lateness as arrival − ce-time (the nominal tick). Raw sink capacity
// is autocannon against the same fast sink, in the same run.
//
//   npm run bench:ping -- [--schedules 10000] [--dispatchers 1] [--slow 1000] [--minutes 3]
//                         [--slow-delay-ms 120000] [--schedule '* * * * *'] [--register-only]
import { fork } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { cpus } from 'node:os'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { Deliverer, resolveDeliveryPolicy } from '../src/delivery/index.ts'
import type { DeliveryTarget } from '../src/delivery/index.ts'
import { PingEventBuilder, ScheduleTable, TickLedger, TickTimer } from '../src/ping/index.ts'
import type { Firing } from '../src/ping/index.ts'
import type { PingSinkCommand, PingSinkMessage } from './ping-sink.ts'

const { values } = parseArgs({
  options: {
    schedules: { type: 'string', default: '10000' },
    dispatchers: { type: 'string', default: '1' },
    slow: { type: 'string', default: '1000' },
    minutes: { type: 'string', default: '3' },
    'slow-delay-ms': { type: 'string', default: '120000' },
    schedule: { type: 'string', default: '* * * * *' },
    'register-only': { type: 'boolean', default: false },
    // Internal: this process is one dispatcher.
    worker: { type: 'boolean', default: false },
    index: { type: 'string', default: '0' },
    'fast-url': { type: 'string', default: 'http://127.0.0.1:9/' },
    'slow-url': { type: 'string', default: 'http://127.0.0.1:9/' }
  }
})

type WorkerMessage =
  | { readonly type: 'ready'; readonly registeredRssMb: number; readonly heapMb: number; readonly setupMs: number }
  | {
      readonly type: 'done'
      readonly fired: number
      readonly delivered: number
      readonly cpuPercent: number
      readonly peakRssMb: number
      readonly longestFiringMs: number
      readonly ticks: number
    }

const mb = (bytes: number) => Math.round(bytes / 1024 / 1024)

if (values.worker) await runWorker()
else await runMain()

async function runWorker(): Promise<void> {
  const schedules = Number(values.schedules)
  const slow = Number(values.slow)
  const index = Number(values.index)
  const minutes = Number(values.minutes)
  const started = performance.now()
  const deliverer = new Deliverer()
  const table = new ScheduleTable()
  const ledger = new TickLedger()
  const policy = resolveDeliveryPolicy(undefined)
  const sources = new Map<string, { builder: PingEventBuilder; target: DeliveryTarget }>()
  const now = Date.now()
  for (let i = 0; i < schedules; i++) {
    const key = `PingSource/bench/d${index}-p${i}`
    const sink = i < slow ? `${values['slow-url']}p${i}` : `${values['fast-url']}p${i}`
    sources.set(key, {
      builder: new PingEventBuilder({
        namespace: 'bench',
        name: `d${index}-p${i}`,
        uid: randomUUID(),
        contentType: 'application/json',
        data: `{"n":${i}}`
      }),
      target: Object.freeze({ sourceKey: key, sink: Object.freeze({ uri: sink }), policy })
    })
    table.set(key, { schedule: values.schedule, creationMs: now - 3_600_000, latePolicy: 'all' }, now, now)
  }
  globalThis.gc?.()
  const memory = process.memoryUsage()
  send({
    type: 'ready',
    registeredRssMb: mb(memory.rss),
    heapMb: mb(memory.heapUsed),
    setupMs: Math.round(performance.now() - started)
  })
  if (values['register-only']) process.exit(0)

  let fired = 0
  let delivered = 0
  let ticks = 0
  let longestFiringMs = 0
  let peakRss = memory.rss
  const fastExpected = schedules - slow
  let lastTickDelivered = 0
  let lastTick = 0
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 500)
  const cpuStart = process.cpuUsage()
  const wallStart = performance.now()
  let finish: () => void = () => undefined
  const finished = new Promise<void>(resolve => (finish = resolve))
  const onFiring = (firing: Firing) => {
    const t0 = performance.now()
    for (const tick of firing.ticks) {
      const source = sources.get(tick.key)
      if (!source) continue
      if (tick.at !== lastTick) {
        lastTick = tick.at
        lastTickDelivered = 0
        ticks++
        if (ticks > minutes) {
          timer.stop()
          return finish()
        }
      }
      fired++
      const at = tick.at
      ledger.begin(tick.key, at)
      void deliverer.deliver(source.builder.event(at, tick.late), source.target).then(outcome => {
        if (outcome.kind === 'aborted') return
        ledger.end(tick.key, at)
        delivered++
        if (at === lastTick && ++lastTickDelivered === fastExpected && ticks === minutes) finish()
      })
    }
    longestFiringMs = Math.max(longestFiringMs, performance.now() - t0)
  }
  const timer = new TickTimer({ table, onFiring })
  timer.start()
  await finished
  timer.stop()
  const cpu = process.cpuUsage(cpuStart)
  clearInterval(sampler)
  send({
    type: 'done',
    fired,
    delivered,
    cpuPercent: Math.round(((cpu.user + cpu.system) / 1000 / (performance.now() - wallStart)) * 1000) / 10,
    peakRssMb: mb(peakRss),
    longestFiringMs: Math.round(longestFiringMs),
    ticks: Math.min(ticks, minutes)
  })
  // The slow sink's requests are still open: leave without waiting for them.
  setTimeout(() => process.exit(0), 200)
}

function send(message: WorkerMessage): void {
  process.send?.(message)
}

async function runMain(): Promise<void> {
  const schedules = Number(values.schedules)
  const dispatchers = Number(values.dispatchers)
  const slow = Number(values.slow)
  const minutes = Number(values.minutes)
  const self = fileURLToPath(import.meta.url)
  const out = (line: string) => process.stdout.write(`${line}\n`)
  out(
    `# bench:ping — ${schedules} schedules '${values.schedule}' on ${dispatchers} dispatcher(s), ${slow} at a sink answering after ${Number(values['slow-delay-ms']) / 1000} s, ${minutes} tick(s); nproc ${cpus().length}, Node ${process.version}`
  )
  if (values['register-only']) {
    const worker = startWorker(self, ['--schedules', String(schedules), '--slow', '0', '--register-only'])
    const ready = await nextMessage(worker.child, 'ready')
    out(
      `registered ${schedules} schedules in ${ready.setupMs} ms: RSS ${ready.registeredRssMb} MB (heap ${ready.heapMb} MB) after GC`
    )
    await worker.exited
    return
  }
  const sink = fork(fileURLToPath(new URL('./ping-sink.ts', import.meta.url)), [
    '--slow-delay-ms',
    String(values['slow-delay-ms'])
  ])
  try {
    const { fastPort, slowPort } = await nextMessage(sink, 'listening')
    const fastUrl = `http://127.0.0.1:${fastPort}/`
    const capacity = await rawCapacity(fastUrl)
    out(`raw sink capacity (autocannon, 128 connections, 5 s): ${Math.round(capacity)} requests/s`)
    sink.send({ type: 'reset' } satisfies PingSinkCommand)
    const workers = Array.from({ length: dispatchers }, (_, d) => {
      const share = Math.floor(schedules / dispatchers) + (d < schedules % dispatchers ? 1 : 0)
      const slowShare = Math.floor(slow / dispatchers) + (d < slow % dispatchers ? 1 : 0)
      return startWorker(self, [
        '--schedules',
        String(share),
        '--slow',
        String(slowShare),
        '--index',
        String(d),
        '--minutes',
        String(minutes),
        '--schedule',
        values.schedule,
        '--fast-url',
        fastUrl,
        '--slow-url',
        `http://127.0.0.1:${slowPort}/`
      ])
    })
    const ready = await Promise.all(workers.map(w => nextMessage(w.child, 'ready')))
    for (const [d, r] of ready.entries()) {
      out(`dispatcher ${d}: registered in ${r.setupMs} ms, RSS ${r.registeredRssMb} MB (heap ${r.heapMb} MB)`)
    }
    const sinkCpu = process.cpuUsage()
    void sinkCpu
    const done = await Promise.all(workers.map(w => nextMessage(w.child, 'done')))
    sink.send({ type: 'stats' } satisfies PingSinkCommand)
    const stats = await nextMessage(sink, 'stats')
    for (const [d, r] of done.entries()) {
      out(
        `dispatcher ${d}: ${r.ticks} ticks, fired ${r.fired}, handled ${r.delivered}, CPU ${r.cpuPercent} % of a core over the run, peak RSS ${r.peakRssMb} MB, longest synchronous firing ${r.longestFiringMs} ms`
      )
    }
    out(
      `lateness of the ${stats.fast} events at the fast sink (arrival − ce-time): p50 ${stats.latenessMs.p50} ms, p99 ${stats.latenessMs.p99} ms, max ${stats.latenessMs.max} ms`
    )
    for (const tick of stats.ticks) {
      out(`  tick ${tick.tick}: ${tick.events} events, p50 ${tick.p50} ms, p99 ${tick.p99} ms, max ${tick.max} ms`)
    }
    out(
      `peak send rate at the top of the minute: ${stats.peakPerSecond} events/s = ${(stats.peakPerSecond / capacity).toFixed(2)} of the raw sink capacity`
    )
    out(
      `slow sink: ${stats.slowArrived} requests reached it, at most ${stats.slowMaxConnections} connections open to it (cap 128 per origin per dispatcher)`
    )
    await Promise.all(workers.map(w => w.exited))
  } finally {
    sink.kill()
  }
}

function startWorker(self: string, args: readonly string[]): { child: ChildProcess; exited: Promise<void> } {
  const child = fork(self, ['--worker', ...args], { execArgv: [...process.execArgv, '--expose-gc'] })
  const exited = new Promise<void>(resolve => child.once('exit', () => resolve()))
  return { child, exited }
}

function nextMessage<K extends (WorkerMessage | PingSinkMessage)['type']>(
  child: ChildProcess,
  type: K
): Promise<Extract<WorkerMessage | PingSinkMessage, { type: K }>> {
  return new Promise((resolve, reject) => {
    const onMessage = (message: WorkerMessage | PingSinkMessage) => {
      if (message.type !== type) return
      child.off('message', onMessage)
      child.off('exit', onExit)
      resolve(message as Extract<WorkerMessage | PingSinkMessage, { type: K }>)
    }
    const onExit = (code: number | null) => reject(new Error(`a child exited (${code}) before sending ${type}`))
    child.on('message', onMessage)
    child.once('exit', onExit)
  })
}

async function rawCapacity(url: string): Promise<number> {
  // Loaded here, not at the top: the dispatcher processes (this file too) must not carry it in their RSS.
  const { default: autocannon } = await import('autocannon')
  const result = await autocannon({
    url: `${url}capacity`,
    method: 'POST',
    connections: 128,
    duration: 5,
    headers: {
      'ce-specversion': '1.0',
      'ce-id': 'x',
      'ce-source': '/bench',
      'ce-type': 'dev.knative.sources.ping',
      'ce-time': new Date().toISOString(),
      'content-type': 'application/json'
    },
    body: '{"n":0}'
  })
  return result.requests.average
}
