// KafkaSource in-flight scaling (issue 4): sinks that hold every answer 30 s, and 1k, 5k and 15k deliveries in
// flight from one `shoal dispatcher` process, then 100k across a pool of eight. Per level: the dispatcher's RSS
// per in-flight delivery (the slope above its idle RSS, with the sources placed and the pool warm), its CPU while
// holding, and the added dispatch latency — record fetched → request handed to the socket — read from its
// /metrics (`shoal_source_dispatch_delay_seconds`). The peer, in the same run: a bare undici request loop held
// by the same sinks.
//
// Sinks: one process per loopback address (127.0.0.2, 127.0.0.3, …), so no destination runs out of ephemeral
// ports and no process out of files (each child runs with its soft open-files limit raised to the hard one).
// Sources: one per held sink (its own topic, 8 partitions, `consumers` = the number of dispatchers, unordered,
// `maxInFlight` = its share of the level), plus a probe source to a sink that answers at once: while the level is
// held, probe records trickle through the same dispatcher, so their dispatch delay is the latency added by
// holding that many (the held records' own delay, measured as they ramp up, is reported too).
//
//   npm run bench:kafka-source-inflight [-- --levels 1000,5000,15000 --pool 100000 --dispatchers 8 --hold-ms 30000]
import { spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { createInterface } from 'node:readline'
import { parseArgs } from 'node:util'
import { Producer } from '@platformatic/kafka'
import { ensureTopics } from '../src/kafka/index.ts'
import { cpuSeconds, deleteTopic, machine, rssBytes, sleep, startKafka } from './kafka-source-harness.ts'
import type { PeerCommand, PeerMessage } from './kafka-source-inflight-peer.ts'
import type { HoldSinkCommand, HoldSinkMessage } from './kafka-source-inflight-sink.ts'

const { values } = parseArgs({
  options: {
    levels: { type: 'string', default: '1000,5000,15000' },
    /** In flight across the pool; 0 skips the pool run. */
    pool: { type: 'string', default: '100000' },
    dispatchers: { type: 'string', default: '8' },
    sinks: { type: 'string', default: '8' },
    'hold-ms': { type: 'string', default: '30000' },
    /** How long RSS and CPU are sampled while everything is held (shortened to fit in the hold). */
    'window-ms': { type: 'string', default: '8000' },
    /** Probe records per second per dispatcher while the level is held. */
    'probe-rate': { type: 'string', default: '50' },
    'skip-peer': { type: 'boolean', default: false },
    /** The installation's dispatcher liveness timeout (longer keeps a loaded machine's dispatchers unfenced). */
    'liveness-timeout': { type: 'string', default: '10s' },
    /** Write a heap snapshot of each single dispatcher into this folder, taken while its level is held. */
    'heap-snapshot': { type: 'string' },
    /** NODE_OPTIONS for the dispatchers and the peer (e.g. --max-semi-space-size=16). */
    'node-options': { type: 'string', default: '' }
  }
})
const levels = values.levels.split(',').filter(Boolean).map(Number)
const poolLevel = Number(values.pool)
const poolSize = Number(values.dispatchers)
const sinkCount = Number(values.sinks)
const holdMs = Number(values['hold-ms'])
const windowMs = Number(values['window-ms'])
const probeRate = Number(values['probe-rate'])
const nodeOptions = values['node-options']
const RECORD_BYTES = 1024
const PARTITIONS = 8

const bin = new URL('../bin/shoal.js', import.meta.url).pathname
const sinkScript = new URL('./kafka-source-inflight-sink.ts', import.meta.url).pathname
const peerScript = new URL('./kafka-source-inflight-peer.ts', import.meta.url).pathname
const fmt = (n: number) => Math.round(n).toLocaleString('en-US')
const log = (line: string) => process.stderr.write(`${line}\n`)
const started = performance.now()
const elapsed = () => `${((performance.now() - started) / 1000).toFixed(0)} s`

// ---- processes -------------------------------------------------------------------------------------------------

/** argv for a child that first raises its soft open-files limit to the hard one, then execs node. */
function raised(args: readonly string[]): [string, string[]] {
  return ['/bin/sh', ['-c', 'ulimit -Sn "$(ulimit -Hn)" 2>/dev/null; exec "$0" "$@"', process.execPath, ...args]]
}

function openFilesLimit(pid: number): string {
  const line = readFileSync(`/proc/${pid}/limits`, 'utf8')
    .split('\n')
    .find(l => l.startsWith('Max open files'))
  return line?.split(/\s+/).slice(3, 5).join('/') ?? '?'
}

interface Child {
  readonly pid: number
  readonly child: ChildProcess
  stop(): Promise<void>
}

function exitOf(child: ChildProcess): Promise<void> {
  return new Promise(resolve => {
    if (child.exitCode !== null || child.signalCode !== null) resolve()
    else child.once('exit', () => resolve())
  })
}

/** A `shoal` process, ready once a stdout line matches `ready`; the line is returned. */
function startShoalProcess(
  args: readonly string[],
  ready: RegExp,
  env: NodeJS.ProcessEnv = {}
): Promise<Child & { line: string }> {
  const [file, argv] = raised([bin, ...args])
  const child = spawn(file, argv, {
    env: { ...process.env, SHOAL_LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'inherit']
  })
  const exited = exitOf(child)
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`shoal ${args[0]} did not start in 60 s`)), 60_000)
    createInterface({ input: child.stdout }).on('line', line => {
      if (!ready.test(line)) return
      clearTimeout(timer)
      resolve({
        line,
        pid: child.pid!,
        child,
        async stop() {
          if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM')
          const timeout = setTimeout(() => child.kill('SIGKILL'), 25_000)
          await exited
          clearTimeout(timeout)
        }
      })
    })
    child.once('exit', code => {
      clearTimeout(timer)
      reject(new Error(`shoal ${args[0]} exited ${code}`))
    })
  })
}

/** A node script forked through the open-files wrapper, with IPC. */
function forkRaised(script: string, args: readonly string[], env: NodeJS.ProcessEnv = {}): ChildProcess {
  const [file, argv] = raised([script, ...args])
  return spawn(file, argv, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], env: { ...process.env, ...env } })
}

// ---- sinks -----------------------------------------------------------------------------------------------------

type SinkStats = Extract<HoldSinkMessage, { type: 'stats' }>

interface HoldSink extends Child {
  readonly url: string
  ask(command: HoldSinkCommand): Promise<SinkStats>
}

async function startHoldSink(host: string): Promise<HoldSink> {
  const child = forkRaised(sinkScript, ['--host', host])
  const exited = exitOf(child)
  const port = await new Promise<number>((resolve, reject) => {
    child.once('message', (m: HoldSinkMessage) =>
      m.type === 'listening' ? resolve(m.port) : reject(new Error('sink'))
    )
    child.once('exit', code => reject(new Error(`sink on ${host} exited ${code}`)))
  })
  let queue: Promise<unknown> = Promise.resolve()
  return {
    url: `http://${host}:${port}`,
    pid: child.pid!,
    child,
    ask(command) {
      const next = queue.then(
        () =>
          new Promise<SinkStats>(resolve => {
            child.once('message', (m: HoldSinkMessage) => m.type === 'stats' && resolve(m))
            child.send(command)
          })
      )
      queue = next
      return next
    },
    async stop() {
      if (child.connected) child.disconnect()
      await exited
    }
  }
}

async function heldNow(sinks: readonly HoldSink[]): Promise<number> {
  let held = 0
  for (const s of await Promise.all(sinks.map(sink => sink.ask({ type: 'stats' })))) held += s.held
  return held
}

async function countNow(sinks: readonly HoldSink[]): Promise<number> {
  let count = 0
  for (const s of await Promise.all(sinks.map(sink => sink.ask({ type: 'stats' })))) count += s.count
  return count
}

// ---- metrics ---------------------------------------------------------------------------------------------------

interface Sample {
  readonly name: string
  readonly labels: Readonly<Record<string, string>>
  readonly value: number
}

async function scrape(url: string): Promise<Sample[]> {
  const text = await (await fetch(url)).text()
  const samples: Sample[] = []
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line)
    if (!m) continue
    const labels: Record<string, string> = {}
    for (const l of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!
    samples.push({ name: m[1]!, labels, value: Number(m[3]) })
  }
  return samples
}

/** Cumulative bucket counts (le → count) of a histogram over the series `match` picks. */
type Buckets = Map<number, number>

function buckets(
  samples: readonly Sample[],
  name: string,
  match: (labels: Record<string, string>) => boolean
): Buckets {
  const result: Buckets = new Map()
  for (const s of samples) {
    if (s.name !== `${name}_bucket` || !match(s.labels)) continue
    const le = s.labels['le'] === '+Inf' ? Number.POSITIVE_INFINITY : Number(s.labels['le'])
    result.set(le, (result.get(le) ?? 0) + s.value)
  }
  return result
}

/** The dispatch delay histogram's observations between two scrapes. */
function since(
  now: readonly Sample[],
  before: readonly Sample[],
  match: (labels: Record<string, string>) => boolean
): Buckets {
  const name = 'shoal_source_dispatch_delay_seconds'
  const a = buckets(now, name, match)
  const b = buckets(before, name, match)
  for (const [le, n] of b) a.set(le, (a.get(le) ?? 0) - n)
  return a
}

function addBuckets(into: Buckets, more: Buckets): Buckets {
  for (const [le, n] of more) into.set(le, (into.get(le) ?? 0) + n)
  return into
}

/** Prometheus's histogram_quantile: linear within the bucket the rank falls in. */
function quantile(q: number, b: Buckets): number | undefined {
  const entries = [...b].sort((x, y) => x[0] - y[0])
  const total = entries.at(-1)?.[1] ?? 0
  if (total === 0) return undefined
  const rank = q * total
  let prevLe = 0
  let prevCount = 0
  for (const [le, count] of entries) {
    if (count >= rank) {
      if (le === Number.POSITIVE_INFINITY) return prevLe
      return prevLe + ((le - prevLe) * (rank - prevCount)) / Math.max(1, count - prevCount)
    }
    prevLe = le
    prevCount = count
  }
  return prevLe
}

const ms = (seconds: number | undefined) => (seconds === undefined ? 'n/a' : `${(seconds * 1000).toFixed(1)} ms`)

function delayText(b: Buckets): string {
  const n = b.get(Number.POSITIVE_INFINITY) ?? 0
  return `${ms(quantile(0.5, b))} / ${ms(quantile(0.99, b))} (n ${fmt(n)})`
}

// ---- Kafka -----------------------------------------------------------------------------------------------------

async function produce(producer: Producer, topic: string, partitions: number, count: number, from = 0): Promise<void> {
  const batch = 2_000
  for (let start = 0; start < count; start += batch) {
    const messages = Array.from({ length: Math.min(batch, count - start) }, (_, i) => {
      const n = from + start + i
      const value = Buffer.alloc(RECORD_BYTES, n & 0xff)
      value.writeUInt32BE(n, 0)
      return { topic, partition: n % partitions, key: Buffer.from(`k${n}`), value }
    })
    await producer.send({ acks: -1, messages })
  }
}

// ---- one level -------------------------------------------------------------------------------------------------

interface DispatcherResult {
  readonly id: string
  readonly pid: number
  readonly openFiles: string
  readonly idleRss: number
  readonly heldRss: number
  /** shoal_source_in_flight of the held sources, read during the window. */
  readonly inFlight: number
  readonly idleCores: number
  readonly heldCores: number
  readonly probe: Buckets
  readonly ramp: Buckets
}

interface LevelResult {
  readonly name: string
  readonly target: number
  readonly dispatchers: readonly DispatcherResult[]
  /** Held at the sinks when the window started and when it ended. */
  readonly heldAtStart: number
  readonly heldAtEnd: number
  readonly fillMs: number
  readonly windowMs: number
  readonly probe: Buckets
  readonly ramp: Buckets
  readonly load: string
}

const loadavg = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')

async function median(read: () => number, samples: number, everyMs: number): Promise<number> {
  const values: number[] = []
  for (let i = 0; i < samples; i++) {
    values.push(read())
    if (i < samples - 1) await sleep(everyMs)
  }
  values.sort((a, b) => a - b)
  return values[Math.floor(values.length / 2)]!
}

async function runLevel(
  kafka: { brokers: string[] },
  held: readonly HoldSink[],
  probeSink: HoldSink,
  name: string,
  target: number,
  dispatcherCount: number
): Promise<LevelResult> {
  const tag = `${process.pid}-${name}`
  const prefix = `bench-ksi-${tag}`
  const brokers = kafka.brokers.join(',')
  const perSource = Math.ceil(target / held.length)
  const maxInFlight = Math.ceil(perSource / dispatcherCount)
  log(
    `[${elapsed()}] ${name}: ${fmt(target)} in flight over ${held.length} sources × ${dispatcherCount} vreplicas (maxInFlight ${maxInFlight}), ${dispatcherCount} dispatcher(s)`
  )
  const topics = held.map((_, i) => `${prefix}-s${i}`)
  const probeTopic = `${prefix}-probe`
  await ensureTopics({ brokers: kafka.brokers, clientId: 'bench' }, [
    ...topics.map(t => ({ name: t, partitions: PARTITIONS, configs: {} })),
    { name: probeTopic, partitions: dispatcherCount, configs: {} }
  ])
  const producer = new Producer({ clientId: 'bench-producer', bootstrapBrokers: kafka.brokers, idempotent: true })
  const controller = await startShoalProcess(
    [
      ...['controller', '--kafka', brokers, '--port', '0', '--prefix', prefix, '--buckets', '4'],
      ...['--liveness-timeout', values['liveness-timeout']]
    ],
    /serving the API on \S+/
  )
  const api = /serving the API on (\S+)/.exec(controller.line)![1]!
  const dispatchers: Array<Child & { id: string; metrics: string }> = []
  try {
    const capacity = held.length + 1
    const snapshots = values['heap-snapshot']
    for (let i = 0; i < dispatcherCount; i++) {
      const id = `dispatcher-${i}`
      const d = await startShoalProcess(
        [
          ...['dispatcher', '--kafka', brokers, '--prefix', prefix, '--id', id],
          ...['--liveness-timeout', values['liveness-timeout']],
          ...['--zone', 'a', '--node', `a-${i + 1}`, '--capacity', String(capacity)],
          ...['--metrics-port', '0', '--max-connections-per-origin', String(Math.max(128, perSource))]
        ],
        / up\b/,
        {
          NODE_OPTIONS: [
            nodeOptions,
            snapshots !== undefined && dispatcherCount === 1
              ? `--heapsnapshot-signal=SIGUSR2 --diagnostic-dir=${snapshots}`
              : ''
          ].join(' ')
        }
      )
      dispatchers.push({ ...d, id, metrics: /metrics at (\S+)/.exec(d.line)![1]! })
    }
    const create = async (sourceName: string, topic: string, sink: string, inFlight: number) => {
      const manifest = [
        'apiVersion: sources.knative.dev/v1beta1',
        'kind: KafkaSource',
        `metadata: {name: ${sourceName}}`,
        'spec:',
        `  bootstrapServers: [${brokers}]`,
        `  topics: [${topic}]`,
        `  consumers: ${dispatcherCount}`,
        '  initialOffset: earliest',
        '  ordering: unordered',
        `  maxInFlight: ${inFlight}`,
        `  sink: {uri: "${sink}/"}`,
        ''
      ].join('\n')
      // 503 while the controllers still share out the store's buckets: ask again.
      let response: Response
      for (let tries = 1; ; tries++) {
        response = await fetch(`${api}/apis/sources.knative.dev/v1beta1/namespaces/default/kafkasources`, {
          method: 'POST',
          headers: { 'content-type': 'application/yaml' },
          body: manifest
        })
        if (response.status !== 503 || tries === 120) break
        await response.text()
        await sleep(500)
      }
      if (response.status !== 201)
        throw new Error(`creating ${sourceName}: ${response.status} ${await response.text()}`)
    }
    for (let i = 0; i < held.length; i++) await create(`held-${i}`, topics[i]!, held[i]!.url, maxInFlight)
    await create('probe', probeTopic, probeSink.url, 100)

    // Placed and warm: every partition owned where expected, and warm-up records delivered through every source.
    await Promise.all([...held, probeSink].map(s => s.ask({ type: 'hold', ms: 0 })))
    const warmPerSource = PARTITIONS * 10
    const countBefore = await countNow(held)
    const probeBefore = await countNow([probeSink])
    for (const t of topics) await produce(producer, t, PARTITIONS, warmPerSource)
    await produce(producer, probeTopic, dispatcherCount, dispatcherCount * 10)
    const expectedPartitions = (held.length * PARTITIONS) / dispatcherCount + 1
    const placedBy = performance.now() + 120_000
    for (;;) {
      const owned = await Promise.all(
        dispatchers.map(
          async d => (await scrape(d.metrics)).filter(s => s.name === 'shoal_source_partition_lag').length
        )
      )
      const warmed =
        (await countNow(held)) - countBefore >= warmPerSource * held.length &&
        (await countNow([probeSink])) - probeBefore >= dispatcherCount * 10
      if (warmed && owned.every(n => n === expectedPartitions)) break
      if (performance.now() > placedBy)
        throw new Error(`not placed and warm in 120 s: partitions owned ${owned.join(', ')}`)
      await sleep(500)
    }
    log(`[${elapsed()}] ${name}: placed and warm; load ${loadavg()}`)
    const warmScrapes = await Promise.all(dispatchers.map(d => scrape(d.metrics)))
    await sleep(3_000)
    const idle = await Promise.all(
      dispatchers.map(async d => {
        const cpu0 = cpuSeconds(d.pid)
        const t0 = performance.now()
        const rss = await median(() => rssBytes(d.pid), 9, 250)
        return { rss, cores: (cpuSeconds(d.pid) - cpu0) / ((performance.now() - t0) / 1000) }
      })
    )

    // The level: every record of the held sources goes in flight and stays there for the hold.
    await Promise.all(held.map(s => s.ask({ type: 'hold', ms: holdMs })))
    const produceStart = performance.now()
    // Produced while the sinks fill: the first records are held while the last are still being written.
    const producing = Promise.all(topics.map(t => produce(producer, t, PARTITIONS, perSource, warmPerSource)))
    let heldAtStart = 0
    const fillBy = produceStart + holdMs - 3_000
    while (performance.now() < fillBy) {
      heldAtStart = await heldNow(held)
      if (heldAtStart >= perSource * held.length) break
      await sleep(100)
    }
    const fillMs = performance.now() - produceStart
    await producing
    const window = Math.max(1_000, Math.min(windowMs, produceStart + holdMs - 2_000 - performance.now()))
    log(
      `[${elapsed()}] ${name}: ${fmt(heldAtStart)} held at the sinks after ${(fillMs / 1000).toFixed(1)} s; sampling ${(window / 1000).toFixed(1)} s`
    )

    // While held: RSS samples, CPU, and probe records trickling through each dispatcher.
    const cpu0 = dispatchers.map(d => cpuSeconds(d.pid))
    const t0 = performance.now()
    const rssSamples = dispatchers.map(() => [] as number[])
    let probeSent = 0
    const probing = (async () => {
      const perTick = Math.max(1, Math.round((probeRate * dispatcherCount) / 10))
      while (performance.now() - t0 < window - 200) {
        await produce(producer, probeTopic, dispatcherCount, perTick, 1_000_000 + probeSent)
        probeSent += perTick
        await sleep(100)
      }
    })()
    let inFlight: number[] = dispatchers.map(() => 0)
    let scraped = false
    while (performance.now() - t0 < window) {
      dispatchers.forEach((d, i) => rssSamples[i]!.push(rssBytes(d.pid)))
      if (!scraped && performance.now() - t0 > window / 2) {
        scraped = true
        inFlight = await Promise.all(
          dispatchers.map(async d =>
            (await scrape(d.metrics))
              .filter(s => s.name === 'shoal_source_in_flight' && s.labels['source']?.startsWith('default/held-'))
              .reduce((n, s) => n + s.value, 0)
          )
        )
      }
      await sleep(250)
    }
    const windowSeconds = (performance.now() - t0) / 1000
    const heldCores = dispatchers.map((d, i) => (cpuSeconds(d.pid) - cpu0[i]!) / windowSeconds)
    await probing
    if (snapshots !== undefined && dispatcherCount === 1) {
      // After the samples: the snapshot stops the process for a while.
      process.kill(dispatchers[0]!.pid, 'SIGUSR2')
      log(`[${elapsed()}] ${name}: heap snapshot requested into ${snapshots}`)
      await sleep(Math.max(0, produceStart + holdMs - 1_000 - performance.now()))
    }
    const heldAtEnd = await heldNow(held)
    log(
      `[${elapsed()}] ${name}: ${fmt(heldAtEnd)} held at the end of the window; ${probeSent} probe records; load ${loadavg()}`
    )
    const load = loadavg()

    // Release: the held attempts end and report their dispatch delay; then read the histograms.
    await Promise.all(held.map(s => s.ask({ type: 'release' })))
    await Promise.all(held.map(s => s.ask({ type: 'hold', ms: 0 })))
    await Promise.all(held.map(s => s.ask({ type: 'release' })))
    const drainBy = performance.now() + 30_000
    let final: Sample[][] = []
    for (;;) {
      final = await Promise.all(dispatchers.map(d => scrape(d.metrics)))
      const left = final
        .flat()
        .filter(s => s.name === 'shoal_source_in_flight')
        .reduce((n, s) => n + s.value, 0)
      if (left === 0 || performance.now() > drainBy) break
      await sleep(250)
    }
    const isProbe = (l: Record<string, string>) => l['source'] === 'default/probe'
    const isHeld = (l: Record<string, string>) => l['source']?.startsWith('default/held-') === true
    const results: DispatcherResult[] = dispatchers.map((d, i) => {
      const sorted = [...rssSamples[i]!].sort((a, b) => a - b)
      return {
        id: d.id,
        pid: d.pid,
        openFiles: openFilesLimit(d.pid),
        idleRss: idle[i]!.rss,
        heldRss: sorted[Math.floor(sorted.length / 2)]!,
        inFlight: inFlight[i]!,
        idleCores: idle[i]!.cores,
        heldCores: heldCores[i]!,
        probe: since(final[i]!, warmScrapes[i]!, isProbe),
        ramp: since(final[i]!, warmScrapes[i]!, isHeld)
      }
    })
    return {
      name,
      target,
      dispatchers: results,
      heldAtStart,
      heldAtEnd,
      fillMs,
      windowMs: windowSeconds * 1000,
      probe: results.reduce((b, r) => addBuckets(b, r.probe), new Map() as Buckets),
      ramp: results.reduce((b, r) => addBuckets(b, r.ramp), new Map() as Buckets),
      load
    }
  } finally {
    await Promise.all(dispatchers.map(d => d.stop()))
    await controller.stop()
    await producer.close()
    for (const t of [...topics, probeTopic]) await deleteTopic(kafka.brokers, t)
  }
}

// ---- the peer --------------------------------------------------------------------------------------------------

interface PeerResult {
  readonly target: number
  readonly idleRss: number
  readonly heldRss: number
  readonly held: number
  readonly heldCores: number
}

async function runPeer(held: readonly HoldSink[], target: number): Promise<PeerResult> {
  const child = forkRaised(
    peerScript,
    ['--sinks', held.map(s => s.url).join(','), '--record-bytes', String(RECORD_BYTES)],
    { NODE_OPTIONS: nodeOptions }
  )
  const exited = exitOf(child)
  const next = (type: PeerMessage['type']) =>
    new Promise<void>((resolve, reject) => {
      const on = (m: PeerMessage) => {
        if (m.type === 'error') log(`peer: ${m.error}`)
        if (m.type !== type) return
        child.off('message', on)
        resolve()
      }
      child.on('message', on)
      child.once('exit', code => reject(new Error(`peer exited ${code}`)))
    })
  const tell = (command: PeerCommand) => child.send(command)
  try {
    await Promise.all(held.map(s => s.ask({ type: 'hold', ms: 0 })))
    const warm = next('warm')
    tell({ type: 'warm', perOrigin: 10 })
    await warm
    await sleep(2_000)
    const pid = child.pid!
    const idleRss = await median(() => rssBytes(pid), 9, 250)
    await Promise.all(held.map(s => s.ask({ type: 'hold', ms: holdMs })))
    const t = performance.now()
    const go = next('started')
    tell({ type: 'go', count: target })
    await go
    let heldCount = 0
    while (performance.now() - t < holdMs - 3_000) {
      heldCount = await heldNow(held)
      if (heldCount >= target) break
      await sleep(100)
    }
    const window = Math.max(1_000, Math.min(windowMs, t + holdMs - 2_000 - performance.now()))
    const cpu0 = cpuSeconds(pid)
    const w0 = performance.now()
    const rss = await median(() => rssBytes(pid), Math.max(3, Math.floor(window / 250)), 250)
    const heldCores = (cpuSeconds(pid) - cpu0) / ((performance.now() - w0) / 1000)
    log(`[${elapsed()}] peer ${fmt(target)}: ${fmt(heldCount)} held after ${((w0 - t) / 1000).toFixed(1)} s`)
    return { target, idleRss, heldRss: rss, held: heldCount, heldCores }
  } finally {
    await Promise.all(held.map(s => s.ask({ type: 'release' })))
    await Promise.all(held.map(s => s.ask({ type: 'hold', ms: 0 })))
    await Promise.all(held.map(s => s.ask({ type: 'release' })))
    if (child.connected) child.disconnect()
    await exited
  }
}

// ---- main ------------------------------------------------------------------------------------------------------

const kb = (bytes: number) => (bytes / 1024).toFixed(1)
const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(0)

/** Least-squares slope through (in flight, RSS above idle). */
function fitSlope(points: ReadonlyArray<readonly [number, number]>): number {
  const n = points.length
  const mx = points.reduce((s, p) => s + p[0], 0) / n
  const my = points.reduce((s, p) => s + p[1], 0) / n
  const sxy = points.reduce((s, p) => s + (p[0] - mx) * (p[1] - my), 0)
  const sxx = points.reduce((s, p) => s + (p[0] - mx) ** 2, 0)
  return sxx === 0 ? my / mx : sxy / sxx
}

const kafka = await startKafka()
const held: HoldSink[] = []
let probeSink: HoldSink | undefined
const results: LevelResult[] = []
const peers: PeerResult[] = []
const loadBefore = loadavg()
try {
  for (let i = 0; i < sinkCount; i++) held.push(await startHoldSink(`127.0.0.${2 + i}`))
  probeSink = await startHoldSink(`127.0.0.${2 + sinkCount}`)
  log(
    `sinks: ${held.map(s => s.url).join(' ')}; probe ${probeSink.url}; open files (soft/hard) ${openFilesLimit(held[0]!.pid)}`
  )
  for (const level of levels) {
    results.push(await runLevel(kafka, held, probeSink, `${level / 1000}k`, level, 1))
    if (!values['skip-peer']) peers.push(await runPeer(held, level))
  }
  if (poolLevel > 0)
    results.push(await runLevel(kafka, held, probeSink, `pool-${poolLevel / 1000}k`, poolLevel, poolSize))
} finally {
  await Promise.all([...held, ...(probeSink ? [probeSink] : [])].map(s => s.stop()))
  await kafka.stop()
}

const commit = await new Promise<string>(resolve => {
  const git = spawn('git', ['rev-parse', '--short', 'HEAD'], { stdio: ['ignore', 'pipe', 'ignore'] })
  let out = ''
  git.stdout.on('data', d => (out += d))
  git.once('exit', () => resolve(out.trim()))
})
console.log(
  `\n${machine()}, commit ${commit}, ${RECORD_BYTES} B records, hold ${holdMs / 1000} s, ${sinkCount} held sinks, ` +
    `NODE_OPTIONS "${nodeOptions}"; load average before ${loadBefore}; ${((performance.now() - started) / 1000).toFixed(0)} s in all\n`
)
console.log(
  '| level | in flight (sinks / dispatcher gauge) | fill | idle RSS | RSS holding | **KB per in-flight** | CPU holding (idle) | dispatch delay, probes p50 / p99 | dispatch delay, held records (ramp) p50 / p99 | load |'
)
console.log('|---|---:|---:|---:|---:|---:|---:|---|---|---|')
for (const r of results.filter(r => r.dispatchers.length === 1)) {
  const d = r.dispatchers[0]!
  console.log(
    `| ${fmt(r.target)} | ${fmt(r.heldAtStart)} → ${fmt(r.heldAtEnd)} / ${fmt(d.inFlight)} | ${(r.fillMs / 1000).toFixed(1)} s | ${mb(d.idleRss)} MB | ${mb(d.heldRss)} MB | **${kb((d.heldRss - d.idleRss) / r.target)}** | ${d.heldCores.toFixed(2)} (${d.idleCores.toFixed(2)}) | ${delayText(r.probe)} | ${delayText(r.ramp)} | ${r.load} |`
  )
}
const single = results.filter(r => r.dispatchers.length === 1)
if (single.length > 1) {
  const slope = fitSlope(single.map(r => [r.target, r.dispatchers[0]!.heldRss - r.dispatchers[0]!.idleRss]))
  console.log(`\nShoal, least-squares slope over the levels: ${kb(slope)} KB per in-flight delivery (goal ≤ 8 KB)`)
}
if (peers.length > 0) {
  console.log(
    '\n| peer: bare undici loop | held | idle RSS | RSS holding | KB per in-flight | CPU holding | Shoal / peer |'
  )
  console.log('|---|---:|---:|---:|---:|---:|---:|')
  for (const p of peers) {
    const shoal = single.find(r => r.target === p.target)?.dispatchers[0]
    const peerSlope = (p.heldRss - p.idleRss) / p.target
    const ratio = shoal === undefined ? 'n/a' : ((shoal.heldRss - shoal.idleRss) / p.target / peerSlope).toFixed(2)
    console.log(
      `| ${fmt(p.target)} | ${fmt(p.held)} | ${mb(p.idleRss)} MB | ${mb(p.heldRss)} MB | ${kb(peerSlope)} | ${p.heldCores.toFixed(2)} | ${ratio} |`
    )
  }
  if (peers.length > 1) {
    const slope = fitSlope(peers.map(p => [p.target, p.heldRss - p.idleRss]))
    console.log(`\npeer, least-squares slope over the levels: ${kb(slope)} KB per in-flight request`)
  }
}
for (const r of results.filter(r => r.dispatchers.length > 1)) {
  console.log(
    `\npool of ${r.dispatchers.length}: ${fmt(r.heldAtStart)} held at the sinks after ${(r.fillMs / 1000).toFixed(1)} s, ${fmt(r.heldAtEnd)} at the end of the window; load ${r.load}\n`
  )
  console.log(
    '| dispatcher | in flight (gauge) | idle RSS | RSS holding | KB per in-flight | CPU holding (idle) | probes p50 / p99 | held (ramp) p50 / p99 |'
  )
  console.log('|---|---:|---:|---:|---:|---:|---|---|')
  for (const d of r.dispatchers) {
    console.log(
      `| ${d.id} | ${fmt(d.inFlight)} | ${mb(d.idleRss)} MB | ${mb(d.heldRss)} MB | ${d.inFlight > 0 ? kb((d.heldRss - d.idleRss) / d.inFlight) : 'n/a'} | ${d.heldCores.toFixed(2)} (${d.idleCores.toFixed(2)}) | ${delayText(d.probe)} | ${delayText(d.ramp)} |`
    )
  }
  const idle = r.dispatchers.reduce((n, d) => n + d.idleRss, 0)
  const heldRss = r.dispatchers.reduce((n, d) => n + d.heldRss, 0)
  const inFlight = r.dispatchers.reduce((n, d) => n + d.inFlight, 0)
  const cores = r.dispatchers.reduce((n, d) => n + d.heldCores, 0)
  console.log(
    `| **all ${r.dispatchers.length}** | ${fmt(inFlight)} | ${mb(idle)} MB | ${mb(heldRss)} MB | **${kb((heldRss - idle) / Math.max(1, inFlight))}** | ${cores.toFixed(2)} | ${delayText(r.probe)} | ${delayText(r.ramp)} |`
  )
}
console.log(`\nopen files (soft/hard) of the dispatchers: ${results[0]?.dispatchers[0]?.openFiles ?? 'n/a'}`)
