// What the KafkaSource benchmarks share: a broker, a topic filled with 1 KiB records, a sink process that
// counts, and Shoal itself — a `shoal controller` and one `shoal dispatcher` process (or several, in zones of
// their own), given a KafkaSource through the API, exactly as a user runs it.
import { fork, spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { createInterface } from 'node:readline'
import { Admin, Producer } from '@platformatic/kafka'
import { ensureTopics } from '../src/kafka/index.ts'
import { startEmbeddedKafka } from '../src/kafka/embedded/index.ts'
import { startPythonSink } from '../test/sinks/python-sink.ts'
import type { SinkCommand, SinkMessage } from './kafka-source-sink.ts'
import { SinkTally } from './sink-tally.ts'
import type { SinkDeliveries, SinkStats } from './sink-tally.ts'

const bin = new URL('../bin/shoal.js', import.meta.url).pathname
const sinkScript = new URL('./kafka-source-sink.ts', import.meta.url).pathname

export const RECORD_BYTES = 1024
export const PARTITIONS = 12

export const machine = () => `nproc ${availableParallelism()}, Node ${process.version}`

export const sleep = (ms: number) => new Promise(resolve => setTimeout(resolve, ms))

/** The broker KAFKA_BOOTSTRAP_SERVERS names, or an embedded one started (and stopped) here. */
export async function startKafka(): Promise<{ brokers: string[]; pid: number | undefined; stop(): Promise<void> }> {
  const given = process.env['KAFKA_BOOTSTRAP_SERVERS']
  if (given) return { brokers: given.split(','), pid: undefined, stop: async () => undefined }
  const kafka = await startEmbeddedKafka({ port: 0 })
  return { brokers: [...kafka.bootstrapBrokers], pid: kafka.brokers[0]?.pid, stop: () => kafka.stop() }
}

/** Creates a 12-partition topic and fills it with `count` records of 1 KiB, round-robin over the partitions. */
export async function fillTopic(brokers: readonly string[], topic: string, count: number): Promise<number> {
  await ensureTopics({ brokers, clientId: 'bench' }, [{ name: topic, partitions: PARTITIONS, configs: {} }])
  const producer = new Producer({ clientId: 'bench-producer', bootstrapBrokers: [...brokers], idempotent: true })
  const started = performance.now()
  try {
    const batch = 2_000
    for (let from = 0; from < count; from += batch) {
      const messages = Array.from({ length: Math.min(batch, count - from) }, (_, i) => {
        const n = from + i
        const value = Buffer.alloc(RECORD_BYTES, n & 0xff)
        value.writeUInt32BE(n, 0)
        return { topic, partition: n % PARTITIONS, key: Buffer.from(`k${n}`), value }
      })
      // The client ignores the constructor's acks: every send says it.
      await producer.send({ acks: -1, messages })
    }
  } finally {
    await producer.close()
  }
  return performance.now() - started
}

export async function deleteTopic(brokers: readonly string[], topic: string): Promise<void> {
  const admin = new Admin({ clientId: 'bench-admin', bootstrapBrokers: [...brokers] })
  try {
    await admin.deleteTopics({ topics: [topic] })
  } catch {
    // Cleanup only; an embedded broker goes away with its data anyway.
  } finally {
    await admin.close()
  }
}

export type { SinkDeliveries, SinkStats } from './sink-tally.ts'

export interface Sink {
  readonly url: string
  readonly pid: number
  /** The counts since the last reset; `reset` starts a new count first. */
  stats(reset?: boolean): Promise<SinkStats>
  /** Every request since the last reset (empty unless started with `logIds`). */
  deliveries(): Promise<SinkDeliveries>
  stop(): Promise<void>
}

/** Which server a benchmark's sink runs on: Node's (a large listen backlog) or Python's standard library's (5). */
export type SinkKind = 'node' | 'python'

export function sinkKindOf(value: string | undefined): SinkKind {
  if (value === undefined || value === 'node' || value === 'python') return value ?? 'node'
  throw new Error(`--sink ${value}: node or python`)
}

export interface SinkOptions {
  readonly kind?: SinkKind
  readonly delayMs?: number
  readonly checkOrder?: boolean
  readonly countIds?: boolean
  readonly logIds?: boolean
  /** Node only: read each body and count a batch's events. */
  readonly countEvents?: boolean
}

/**
 * Forks bench/kafka-source-sink.ts; or, for `kind: 'python'`, starts test/sinks/python_sink.py and counts what it
 * prints here (an event counts when the sink answers it, its delay after it arrived).
 */
export async function startSink(options: SinkOptions = {}): Promise<Sink> {
  if (options.kind === 'python') return startPythonBenchSink(options)
  const args = [
    ...['--delay-ms', String(options.delayMs ?? 0)],
    ...(options.checkOrder ? ['--check-order'] : []),
    ...(options.countIds ? ['--count-ids'] : []),
    ...(options.logIds ? ['--log-ids'] : []),
    ...(options.countEvents ? ['--count-events'] : [])
  ]
  const child = fork(sinkScript, args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  const exited = new Promise<void>(resolve => child.once('exit', () => resolve()))
  const port = await new Promise<number>((resolve, reject) => {
    child.once('message', (m: SinkMessage) => (m.type === 'listening' ? resolve(m.port) : reject(new Error('sink'))))
    child.once('exit', code => reject(new Error(`sink exited ${code}`)))
  })
  let queue: Promise<unknown> = Promise.resolve()
  // One question at a time (the queue), answered by the next message of its type.
  const ask = <T extends SinkMessage['type']>(command: SinkCommand, type: T) => {
    const next = queue.then(
      () =>
        new Promise<Extract<SinkMessage, { type: T }>>(resolve => {
          const answer = (m: SinkMessage) => {
            if (m.type !== type) return
            child.off('message', answer)
            resolve(m as Extract<SinkMessage, { type: T }>)
          }
          child.on('message', answer)
          child.send(command)
        })
    )
    queue = next
    return next
  }
  return {
    url: `http://127.0.0.1:${port}/`,
    pid: child.pid!,
    stats: (reset = false) => ask({ type: reset ? 'reset' : 'stats' }, 'stats'),
    deliveries: () => ask({ type: 'deliveries' }, 'deliveries'),
    async stop() {
      child.disconnect()
      await exited
    }
  }
}

async function startPythonBenchSink(options: SinkOptions): Promise<Sink> {
  if (options.countEvents) throw new Error('the Python sink does not count batched events')
  const tally = new SinkTally(options)
  const sink = await startPythonSink(['--delay-ms', String(options.delayMs ?? 0)], line => {
    if (line.kind === 'answered') tally.request(line.id, performance.now())
  })
  return {
    url: sink.url,
    pid: sink.child.pid!,
    async stats(reset = false) {
      if (reset) tally.reset()
      return tally.stats(performance.now())
    },
    deliveries: async () => tally.deliveries(),
    stop: () => sink.stop()
  }
}

/** What `waitForCount` saw. */
export interface Counted extends SinkStats {
  /** Whether the count was reached (rather than a time limit). */
  readonly finished: boolean
  /** CPU use from the first request on, and the span and the requests it covers. */
  readonly cpu: CpuUse
  readonly cpuSeconds: number
  readonly cpuEvents: number
}

/**
 * Waits until the sink has counted `count` requests, or `limitMs` has passed since the first, or
 * `deadlineMs` since the call with nothing counted: the benchmarks stop by themselves. Also measures the CPU
 * the given processes used from the first request on (polled every 100 ms).
 */
export async function waitForCount(
  sink: Sink,
  count: number,
  limits: { readonly limitMs: number; readonly deadlineMs: number },
  processes: Readonly<Record<string, number | undefined>>
): Promise<Counted> {
  const started = performance.now()
  let window: { started: number; count: number; read: (seconds: number) => CpuUse } | undefined
  for (;;) {
    const stats = await sink.stats()
    if (window === undefined && stats.count > 0) {
      window = { started: performance.now(), count: stats.count, read: cpuWindow(processes) }
    }
    const finished = stats.count >= count
    if (finished || stats.sinceFirstMs > limits.limitMs || performance.now() - started > limits.deadlineMs) {
      if (window === undefined) throw new Error(`nothing reached the sink in ${limits.deadlineMs} ms`)
      const cpuSeconds = (performance.now() - window.started) / 1000
      return { ...stats, finished, cpu: window.read(cpuSeconds), cpuSeconds, cpuEvents: stats.count - window.count }
    }
    await sleep(100)
  }
}

/** User + system CPU seconds a process has used so far (Linux /proc). */
export function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
  // utime and stime are fields 14 and 15 of the whole line, 12 and 13 after "pid (comm) ".
  return (Number(fields[11]) + Number(fields[12])) / 100
}

/** Busy CPU seconds of the whole machine so far, over every core (Linux /proc/stat). */
export function machineBusySeconds(): number {
  const [, ...ticks] = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/)
  const [user, nice, system, , , irq, softirq, steal] = ticks.map(Number)
  return (user! + nice! + system! + irq! + softirq! + steal!) / 100
}

/** CPU used over a window, in cores (CPU seconds per second) and in CPU seconds, per process and machine-wide. */
export interface CpuUse {
  readonly text: string
  readonly seconds: Readonly<Record<string, number>>
}

/**
 * CPU use of some processes and of the whole machine over a window: calling it starts the window, the
 * function it returns reads it (`seconds` long).
 */
export function cpuWindow(processes: Readonly<Record<string, number | undefined>>): (seconds: number) => CpuUse {
  const known = Object.entries(processes).filter((e): e is [string, number] => e[1] !== undefined)
  const before = known.map(([, pid]) => cpuSeconds(pid))
  const machineBefore = machineBusySeconds()
  return seconds => {
    const used: Record<string, number> = {}
    known.forEach(([name, pid], i) => (used[name] = cpuSeconds(pid) - before[i]!))
    used['machine'] = machineBusySeconds() - machineBefore
    const parts = Object.entries(used).map(([name, s]) => `${name} ${(s / seconds).toFixed(2)}`)
    return { text: `CPU (cores): ${parts.join(', ')}`, seconds: used }
  }
}

export interface ShoalProcess {
  readonly pid: number
  stop(): Promise<void>
}

/** Resident memory of a process in bytes (Linux /proc). */
export function rssBytes(pid: number): number {
  return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024
}

/** How long a `shoal` process gets to exit after SIGTERM before it is killed. */
const STOP_MS = 30_000

/** A `shoal` process (`args` after the bin), ready once a stdout line matches `ready`; the line is returned. */
export function startShoalProcess(
  args: readonly string[],
  ready: RegExp,
  env: NodeJS.ProcessEnv = {}
): Promise<ShoalProcess & { line: string }> {
  const child: ChildProcess = spawn(process.execPath, [bin, ...args], {
    env: { ...process.env, SHOAL_LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'inherit']
  })
  const exited = new Promise<void>(resolve => child.once('exit', () => resolve()))
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`shoal ${args[0]} did not start in 60 s`)), 60_000)
    createInterface({ input: child.stdout! }).on('line', line => {
      if (!ready.test(line)) return
      clearTimeout(timer)
      resolve({
        line,
        pid: child.pid!,
        async stop() {
          if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM')
          // A process that does not stop in time is killed (and said so), so one hung shutdown cannot hang a run.
          const timer = setTimeout(() => {
            const id = args.includes('--id') ? ` ${args[args.indexOf('--id') + 1]}` : ''
            process.stderr.write(`shoal ${args[0]}${id} did not stop ${STOP_MS / 1000} s after SIGTERM: killed\n`)
            child.kill('SIGKILL')
          }, STOP_MS)
          await exited
          clearTimeout(timer)
        }
      })
    })
    child.once('exit', code => {
      clearTimeout(timer)
      reject(new Error(`shoal ${args[0]} exited ${code}`))
    })
  })
}

export interface Shoal {
  /** The first dispatcher's process id. */
  readonly dispatcherPid: number
  /** Every dispatcher's process id, `dispatcher-0` first. */
  readonly dispatcherPids: readonly number[]
  /** The controller's API, `http://host:port`. */
  readonly api: string
  /** Creates a KafkaSource through the controller's API. */
  createSource(spec: {
    name: string
    topic: string
    sink: string
    consumers: number
    ordering: 'ordered' | 'unordered'
    /** spec.consumerGroup; the server picks one when absent. */
    consumerGroup?: string
  }): Promise<void>
  stop(): Promise<void>
}

/** A `shoal dispatcher` to start: its zone (node `<zone>-1`) and capacity. */
export interface DispatcherSpec {
  readonly zone: string
  readonly capacity: number
}

/**
 * One `shoal controller` and one `shoal dispatcher` process sharing a fresh store prefix. `dispatcherEnv` goes
 * to the dispatcher only (NODE_OPTIONS=--cpu-prof to profile it).
 */
export function startShoal(
  brokers: readonly string[],
  prefix: string,
  dispatcherEnv: NodeJS.ProcessEnv = {}
): Promise<Shoal> {
  return startShoalCluster(brokers, prefix, [{ zone: 'a', capacity: 12 }], dispatcherEnv)
}

/**
 * One `shoal controller` and a `shoal dispatcher` process per spec (`dispatcher-0`, `dispatcher-1`, …, started
 * one after the other), sharing a fresh store prefix. `dispatcherEnv` goes to the dispatchers only.
 */
export async function startShoalCluster(
  brokers: readonly string[],
  prefix: string,
  dispatchers: readonly DispatcherSpec[],
  dispatcherEnv: NodeJS.ProcessEnv = {}
): Promise<Shoal> {
  const kafka = brokers.join(',')
  const controller = await startShoalProcess(
    ['controller', '--kafka', kafka, '--port', '0', '--prefix', prefix, '--buckets', '4'],
    /serving the API on \S+/,
    {}
  )
  const api = /serving the API on (\S+)/.exec(controller.line)![1]!
  const started: ShoalProcess[] = []
  const stop = async () => {
    await Promise.all(started.map(d => d.stop()))
    await controller.stop()
  }
  try {
    for (const [i, d] of dispatchers.entries()) {
      started.push(
        await startShoalProcess(
          [
            ...['dispatcher', '--kafka', kafka, '--prefix', prefix, '--id', `dispatcher-${i}`],
            ...['--zone', d.zone, '--node', `${d.zone}-1`, '--capacity', String(d.capacity)]
          ],
          / up\b/,
          dispatcherEnv
        )
      )
    }
  } catch (error) {
    await stop()
    throw error
  }
  return {
    dispatcherPid: started[0]!.pid,
    dispatcherPids: started.map(d => d.pid),
    api,
    async createSource(spec) {
      const manifest = [
        'apiVersion: sources.knative.dev/v1beta1',
        'kind: KafkaSource',
        `metadata: {name: ${spec.name}}`,
        'spec:',
        `  bootstrapServers: [${kafka}]`,
        `  topics: [${spec.topic}]`,
        `  consumers: ${spec.consumers}`,
        ...(spec.consumerGroup === undefined ? [] : [`  consumerGroup: ${spec.consumerGroup}`]),
        '  initialOffset: earliest',
        `  ordering: ${spec.ordering}`,
        `  sink: {uri: "${spec.sink}"}`,
        ''
      ].join('\n')
      const response = await fetch(`${api}/apis/sources.knative.dev/v1beta1/namespaces/default/kafkasources`, {
        method: 'POST',
        headers: { 'content-type': 'application/yaml' },
        body: manifest
      })
      if (response.status !== 201) throw new Error(`creating the source: ${response.status} ${await response.text()}`)
    },
    stop
  }
}
