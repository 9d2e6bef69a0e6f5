// PingSources at scale: N schedules firing every minute on D dispatchers for M minutes, K of them pointing at a
// sink that answers after two minutes. Each dispatcher is a process running what a dispatcher's PingSource plane
// runs per tick — the ScheduleTable with its one TickTimer, a PingEventBuilder per source, the TickLedger, and
// one shared Deliverer (128 connections per sink origin, a queue per source) — fed by the bench rather than by
// the store (creating 100,000 resources through the API would measure the API). The sinks run in a process of
// their own (bench/ping-sink.ts) and measure lateness as arrival − ce-time (the nominal tick). Raw sink capacity
// is autocannon against the same fast sink, in the same run.
//
//   npm run bench:ping -- [--schedules 10000] [--dispatchers 1] [--slow 1000] [--minutes 3]
//                         [--slow-delay-ms 120000] [--schedule '* * * * *'] [--slice 256] [--register-only]
//
// --slice: ticks handed to the Deliverer per event-loop turn, as the plane's TickFeeder does; 0 hands a whole
// burst over in one go (how the plane did before).
import { fork } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { cpus, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { DEFAULT_SERVICE_URL_TEMPLATE } from '../src/api/index.ts'
import { Deliverer } from '../src/delivery/index.ts'
import type { DeliveryTarget } from '../src/delivery/index.ts'
import { ContractState } from '../src/dispatcher/contract-state.ts'
import { MemoryReleaser } from '../src/ping-source/memory-release.ts'
import type { MemoryRelease } from '../src/ping-source/memory-release.ts'
import { DEFAULT_RELEASE_MEMORY_AFTER } from '../src/ping-source/index.ts'
import {
  DEFAULT_TICK_SLICE,
  PingEventBuilder,
  ScheduleTable,
  StringPool,
  TickFeeder,
  TickLedger,
  TickTimer,
  pingRecordOf,
  pingTargetOf
} from '../src/ping-source/index.ts'
import type { Firing, PingRecord, PingSink, Tick } from '../src/ping-source/index.ts'
import type { StoredPingSource } from '../src/store/index.ts'
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
    // Ticks handed to the Deliverer per event-loop turn, as the plane does (0: the whole burst at once).
    slice: { type: 'string', default: String(DEFAULT_TICK_SLICE) },
    // Internal: this process is one dispatcher.
    worker: { type: 'boolean', default: false },
    index: { type: 'string', default: '0' },
    'fast-url': { type: 'string', default: 'http://127.0.0.1:9/' },
    'slow-url': { type: 'string', default: 'http://127.0.0.1:9/' }
  }
})

type WorkerMessage =
  | {
      readonly type: 'ready'
      readonly registeredRssMb: number
      /** RSS once the plane's MemoryReleaser gave back what registering left behind, and how long it paused. */
      readonly releasedRssMb: number
      readonly releasePauseMs: number
      readonly heapMb: number
      readonly heapTotalMb: number
      readonly records: number
      readonly setupMs: number
    }
  | {
      readonly type: 'done'
      readonly fired: number
      readonly delivered: number
      readonly cpuPercent: number
      readonly peakRssMb: number
      readonly longestFiringMs: number
      /** The longest time from a burst's first tick to its last handed to the Deliverer. */
      readonly longestHandOutMs: number
      /** CPU time (user + system) of this process from each tick to its last fast event answered, per event. */
      readonly cpuPerEventUs: number[]
      /** The event loop's longest delay over the run (what a burst blocks it for). */
      readonly loopDelayMaxMs: number
      readonly ticks: number
    }

/** How long a worker idles after registering before its RSS is read. */
const REGISTERED_IDLE_MS = 10_000
const mb = (bytes: number) => Math.round(bytes / 1024 / 1024)
const retained: unknown[] = []

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
  // The dispatcher's contract: a record per schedule as read from its contracts partition, and the plane's view
  // of it (the PingSource entries).
  const dispatcherId = `dispatcher-${index}`
  const contract = new ContractState(dispatcherId)
  // What the plane keeps per PingSource: its PingRecord (read from the stored object, which is then dropped),
  // and for each one it runs an event builder and a delivery target.
  const strings = new StringPool()
  const records = new Map<string, PingRecord>()
  const sources = new Map<string, { builder: PingEventBuilder; target: DeliveryTarget }>()
  const now = Date.now()
  const created = new Date(now - 3_600_000).toISOString()
  for (let i = 0; i < schedules; i++) {
    const name = `d${index}-p${i}`
    const key = `PingSource/bench/${name}`
    const sink = i < slow ? `${values['slow-url']}p${i}` : `${values['fast-url']}p${i}`
    // As the plane gets it: a stored object decoded from its JSON record.
    const json = JSON.stringify({
      apiVersion: 'sources.knative.dev/v1',
      kind: 'PingSource',
      metadata: { name, namespace: 'bench', uid: randomUUID(), generation: 1, creationTimestamp: created },
      spec: { schedule: values.schedule, contentType: 'application/json', data: `{"n":${i}}`, sink: { uri: sink } }
    })
    const record = pingRecordOf(JSON.parse(json) as StoredPingSource, i, {
      serviceUrlTemplate: DEFAULT_SERVICE_URL_TEMPLATE,
      strings
    })
    records.set(key, record)
    sources.set(key, { builder: new PingEventBuilder(record), target: pingTargetOf(key, record.sink as PingSink) })
    table.set(key, { schedule: record.schedule, creationMs: record.creationMs, latePolicy: 'all' }, now, now)
    const placement = {
      dispatcher: dispatcherId,
      source: key,
      slot: 'schedule',
      vreplicas: 1,
      resourceVersion: String(i),
      epoch: 1
    }
    contract.apply({ offset: BigInt(i), key: `${dispatcherId}/${key}`, value: JSON.parse(JSON.stringify(placement)) })
  }
  const wanted = new Map([...contract.entries].filter(([key]) => key.startsWith('PingSource/')))
  // Held for the rest of the run, as the plane holds them (nothing below reads them).
  retained.push(contract, wanted)
  // Steady state of a dispatcher holding them: a full GC, then idle long enough for V8's memory reducer to give
  // back the pages that registering's garbage (the decoded JSON) grew the heap by.
  globalThis.gc?.()
  await new Promise(resolve => setTimeout(resolve, REGISTERED_IDLE_MS))
  globalThis.gc?.()
  const memory = process.memoryUsage()
  // Then what the plane does after such a load: its MemoryReleaser gives back what registering left behind.
  const released = await new Promise<MemoryRelease>(resolve => {
    // The releaser's timer does not hold a process open; this one does until it has run.
    const alive = setInterval(() => undefined, 1_000)
    const releaser = new MemoryReleaser({
      threshold: DEFAULT_RELEASE_MEMORY_AFTER,
      quietMs: 1,
      onRelease: release => {
        clearInterval(alive)
        resolve(release)
      }
    })
    releaser.load(records.size + wanted.size)
  })
  send({
    type: 'ready',
    registeredRssMb: mb(memory.rss),
    releasedRssMb: mb(released.rssAfter),
    releasePauseMs: Math.round(released.pauseMs),
    heapMb: mb(memory.heapUsed),
    heapTotalMb: mb(memory.heapTotal),
    records: records.size,
    setupMs: Math.round(performance.now() - started)
  })
  if (values['register-only']) process.exit(0)

  let fired = 0
  let delivered = 0
  let ticks = 0
  let longestFiringMs = 0
  let longestHandOutMs = 0
  const cpuPerEventUs: number[] = []
  let burstCpu = process.cpuUsage()
  const loopDelay = monitorEventLoopDelay({ resolution: 10 })
  loopDelay.enable()
  let peakRss = memory.rss
  const fastExpected = schedules - slow
  let lastTickDelivered = 0
  let lastTick = 0
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 500)
  const cpuStart = process.cpuUsage()
  const wallStart = performance.now()
  let finish: () => void = () => undefined
  const finished = new Promise<void>(resolve => (finish = resolve))
  // What the plane does: open each tick in the ledger at once, hand it to the Deliverer in slices.
  const handOut = (tick: Tick) => {
    const source = sources.get(tick.key)
    if (!source) return
    const at = tick.at
    void deliverer.deliver(source.builder.event(at, tick.late), source.target).then(outcome => {
      if (outcome.kind === 'aborted') return
      ledger.end(tick.key, at)
      delivered++
      if (at === lastTick && ++lastTickDelivered === fastExpected) {
        const cpu = process.cpuUsage(burstCpu)
        cpuPerEventUs.push(Math.round((cpu.user + cpu.system) / schedules))
        if (ticks === minutes) finish()
      }
    })
  }
  const slice = Number(values.slice)
  const feeder = new TickFeeder({ handOut, slice: slice > 0 ? slice : Number.MAX_SAFE_INTEGER })
  const onFiring = (firing: Firing) => {
    const t0 = performance.now()
    for (const tick of firing.ticks) {
      if (tick.at !== lastTick) {
        lastTick = tick.at
        lastTickDelivered = 0
        burstCpu = process.cpuUsage()
        ticks++
        if (ticks > minutes) {
          timer.stop()
          return finish()
        }
      }
      fired++
      ledger.begin(tick.key, tick.at)
    }
    feeder.push(firing.ticks)
    longestFiringMs = Math.max(longestFiringMs, performance.now() - t0)
    void feeder.idle().then(() => (longestHandOutMs = Math.max(longestHandOutMs, performance.now() - t0)))
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
    longestHandOutMs: Math.round(longestHandOutMs),
    cpuPerEventUs,
    loopDelayMaxMs: Math.round(loopDelay.max / 1e6),
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
      `registered ${ready.records} schedules in ${ready.setupMs} ms: RSS ${ready.registeredRssMb} MB (heap ${ready.heapMb} MB used of ${ready.heapTotalMb} MB) after GC and ${REGISTERED_IDLE_MS / 1000} s idle; ${ready.releasedRssMb} MB after the plane's memory release (a ${ready.releasePauseMs} ms pause)`
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
    out(
      `load average at the start: ${loadavg()
        .map(l => l.toFixed(1))
        .join(' ')}`
    )
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
        '--slice',
        values.slice,
        '--fast-url',
        fastUrl,
        '--slow-url',
        `http://127.0.0.1:${slowPort}/`
      ])
    })
    const ready = await Promise.all(workers.map(w => nextMessage(w.child, 'ready')))
    for (const [d, r] of ready.entries()) {
      out(
        `dispatcher ${d}: registered in ${r.setupMs} ms, RSS ${r.registeredRssMb} MB (heap ${r.heapMb} MB), ${r.releasedRssMb} MB after the memory release (${r.releasePauseMs} ms pause)`
      )
    }
    const sinkCpu = process.cpuUsage()
    void sinkCpu
    const done = await Promise.all(workers.map(w => nextMessage(w.child, 'done')))
    sink.send({ type: 'stats' } satisfies PingSinkCommand)
    const stats = await nextMessage(sink, 'stats')
    for (const [d, r] of done.entries()) {
      out(
        `dispatcher ${d}: ${r.ticks} ticks, fired ${r.fired}, handled ${r.delivered}, CPU ${r.cpuPercent} % of a core over the run, peak RSS ${r.peakRssMb} MB, longest synchronous firing ${r.longestFiringMs} ms, burst handed out in ${r.longestHandOutMs} ms, event loop delay max ${r.loopDelayMaxMs} ms, CPU per tick and schedule (tick to last fast answer) ${r.cpuPerEventUs.join(', ')} µs`
      )
    }
    out(
      `lateness of the ${stats.fast} events at the fast sink (arrival − ce-time): p50 ${stats.latenessMs.p50} ms, p99 ${stats.latenessMs.p99} ms, max ${stats.latenessMs.max} ms`
    )
    // What the sink could take: the fast events of one tick sent back to back at the raw rate.
    const idealMs = ((schedules - slow) / capacity) * 1000
    out(
      `ideal: ${schedules - slow} events at the raw capacity take ${Math.round(idealMs)} ms; p99 ${(stats.latenessMs.p99 / idealMs).toFixed(2)}× that`
    )
    for (const tick of stats.ticks) {
      out(
        `  tick ${tick.tick}: ${tick.events} events, p50 ${tick.p50} ms, p99 ${tick.p99} ms (${(tick.p99 / idealMs).toFixed(2)}× ideal), max ${tick.max} ms`
      )
    }
    out(
      `peak send rate at the top of the minute: ${stats.peakPerSecond} events/s = ${(stats.peakPerSecond / capacity).toFixed(2)} of the raw sink capacity`
    )
    out(
      `slow sink: ${stats.slowArrived} requests reached it, at most ${stats.slowMaxConnections} connections open to it (cap 128 per origin per dispatcher)`
    )
    out(
      `load average at the end: ${loadavg()
        .map(l => l.toFixed(1))
        .join(' ')}`
    )
    await Promise.all(workers.map(w => w.exited))
  } finally {
    sink.kill()
  }
}

function startWorker(self: string, args: readonly string[]): { child: ChildProcess; exited: Promise<void> } {
  // With Node.js's compile cache, as bin/shoal.js starts every Shoal process (a dispatcher never loads the type
  // stripper once the cache holds its modules); NODE_DISABLE_COMPILE_CACHE=1 measures without it.
  const cache = process.env.NODE_COMPILE_CACHE ?? join(tmpdir(), 'node-compile-cache')
  const child = fork(self, ['--worker', ...args], {
    execArgv: [...process.execArgv, '--expose-gc'],
    env: { ...process.env, NODE_COMPILE_CACHE: cache }
  })
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
