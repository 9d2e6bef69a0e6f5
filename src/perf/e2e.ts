import { randomUUID } from 'node:crypto'
import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import { startController } from '../controller/index.ts'
import { createLogger } from '../log/index.ts'
import type { RunningController } from '../controller/index.ts'
import { startWiredDispatcher } from '../dispatcher/index.ts'
import type { WiredDispatcher } from '../dispatcher/index.ts'
import { ensureTopics } from '../kafka/index.ts'
import { PerfStats } from './perf-stats.ts'
import type { PerfSummary, Percentiles } from './perf-stats.ts'
import { producePerf } from './produce.ts'
import type { Acks, ProducePerfResult } from './produce.ts'

export interface E2ePerfOptions {
  readonly brokers: readonly string[]
  readonly numRecords: number
  readonly recordSize: number
  readonly throughput: number
  readonly acks: Acks
  /** The source's consumers (vreplicas), and the topic's partitions. */
  readonly consumers: number
  readonly partitions: number
  /** Give up when no event reached the sink for this long. */
  readonly timeoutMs?: number
  readonly reportIntervalMs?: number
  readonly onStage?: (text: string) => void
  readonly onWindow?: (window: PerfSummary) => void
  readonly onProgress?: (delivered: number) => void
  readonly signal?: AbortSignal
}

export interface E2ePerfResult {
  readonly produced: ProducePerfResult
  /** Send → the sink's receipt, per distinct event. */
  readonly delivered: PerfSummary
  readonly percentiles: Percentiles
  /** Events the sink received more than once. */
  readonly duplicates: number
  readonly timedOut: boolean
}

/**
 * Measures the whole path: records produced to a new topic, read by a KafkaSource placed on a dispatcher, and
 * POSTed as CloudEvents to a sink in this process. Everything runs here under a prefix of its own (controller,
 * one dispatcher, the sink), so it shares a Kafka cluster with anything. Each record carries its send time
 * (this process's clock) in its first bytes; the sink subtracts it from the receipt time.
 */
export async function e2ePerf(options: E2ePerfOptions): Promise<E2ePerfResult> {
  const stage = options.onStage ?? (() => undefined)
  const run = randomUUID().slice(0, 8)
  const prefix = `shoal-perf-${run}`
  const topic = `shoal-perf-e2e-${run}`
  const sink = await startTimingSink(options.numRecords)
  let controller: RunningController | undefined
  let wired: WiredDispatcher | undefined
  try {
    stage(`topic ${topic} (${options.partitions} partitions), sink ${sink.url}`)
    await ensureTopics({ brokers: options.brokers, clientId: 'shoal-perf' }, [
      { name: topic, partitions: options.partitions, configs: {} }
    ])
    controller = await startController({
      brokers: options.brokers,
      port: 0,
      prefix,
      buckets: 4,
      logger: createLogger('shoal-perf-controller', 'error')
    })
    wired = await startWiredDispatcher({
      dispatcher: {
        brokers: options.brokers,
        prefix,
        buckets: 4,
        id: 'dispatcher-0',
        zone: 'a',
        node: 'perf',
        capacity: options.consumers
      },
      planes: { serviceUrlTemplate: 'http://127.0.0.1/{namespace}/{name}', log: () => undefined }
    })
    stage(
      `controller ${controller.url}, ${wired.dispatcher.id}; applying KafkaSource perf (${options.consumers} consumers)`
    )
    await applyPerfSource(controller, options, topic, sink.url)
    // A first record shows the path is up (source placed, members joined) before anything is measured.
    stage('waiting for a first event to come through')
    await warmUp(options, topic, sink)
    sink.reset(performance.now())
    if (options.onProgress) sink.onEvent(options.onProgress)
    stage(`producing ${options.numRecords} records`)
    return await measure(options, topic, sink)
  } finally {
    await wired?.close().catch(() => undefined)
    await controller?.close().catch(() => undefined)
    sink.server.close()
    sink.server.closeAllConnections()
  }
}

type TimingSink = Awaited<ReturnType<typeof startTimingSink>>

/** The KafkaSource under test: the topic, earliest, the given consumers, the timing sink. */
async function applyPerfSource(
  controller: RunningController,
  options: E2ePerfOptions,
  topic: string,
  sinkUrl: string
): Promise<void> {
  const response = await fetch(`${controller.url}/apis/sources.knative.dev/v1beta1/namespaces/default/kafkasources`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      apiVersion: 'sources.knative.dev/v1beta1',
      kind: 'KafkaSource',
      metadata: { name: 'perf', namespace: 'default' },
      spec: {
        bootstrapServers: [...options.brokers],
        topics: [topic],
        consumers: options.consumers,
        initialOffset: 'earliest',
        sink: { uri: sinkUrl }
      }
    })
  })
  if (response.status !== 201) throw new Error(`applying the KafkaSource failed: ${await response.text()}`)
}

/** One record through, end to end, within 60 s. */
async function warmUp(options: E2ePerfOptions, topic: string, sink: TimingSink): Promise<void> {
  await producePerf({
    brokers: options.brokers,
    topic,
    numRecords: 1,
    recordSize: options.recordSize,
    throughput: -1,
    acks: -1
  })
  const warmDeadline = Date.now() + 60_000
  while (sink.received() === 0) {
    options.signal?.throwIfAborted()
    if (Date.now() > warmDeadline) throw new Error('no event reached the sink within 60 s of applying the source')
    await sleep(50)
  }
}

/** Produces the records, then waits for every one at the sink (or for the sink to go quiet for timeoutMs). */
async function measure(options: E2ePerfOptions, topic: string, sink: TimingSink): Promise<E2ePerfResult> {
  const produced = await producePerf({
    brokers: options.brokers,
    topic,
    numRecords: options.numRecords,
    recordSize: options.recordSize,
    throughput: options.throughput,
    acks: options.acks,
    ...(options.reportIntervalMs === undefined ? {} : { reportIntervalMs: options.reportIntervalMs }),
    ...(options.onWindow ? { onWindow: options.onWindow } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
    stamp: true
  })
  const timeoutMs = options.timeoutMs ?? 30_000
  let timedOut = false
  while (sink.distinct() < options.numRecords) {
    options.signal?.throwIfAborted()
    if (performance.now() - sink.lastAt() > timeoutMs) {
      timedOut = true
      break
    }
    await sleep(20)
  }
  return {
    produced,
    delivered: sink.stats.total(sink.lastAt()),
    percentiles: sink.stats.percentiles(),
    duplicates: sink.duplicates(),
    timedOut
  }
}

/** A sink that answers 202 at once and records, per distinct event id, the time since the record was sent. */
async function startTimingSink(expected: number) {
  let stats = new PerfStats(expected, performance.now())
  let seen = new Set<string>()
  let received = 0
  let duplicates = 0
  let lastAt = performance.now()
  let listener: ((n: number) => void) | undefined
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const now = performance.now()
      res.writeHead(202).end()
      received++
      const id = String(req.headers['ce-id'] ?? '')
      if (seen.has(id)) {
        duplicates++
        return
      }
      seen.add(id)
      const body = Buffer.concat(chunks)
      const sentAt = readStamp(body)
      lastAt = now
      if (sentAt !== undefined) stats.record(now - sentAt, body.length)
      listener?.(seen.size)
    })
  })
  server.keepAliveTimeout = 30_000
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}/`,
    server,
    get stats() {
      return stats
    },
    received: () => received,
    distinct: () => seen.size,
    duplicates: () => duplicates,
    lastAt: () => lastAt,
    onEvent(f: (n: number) => void) {
      listener = f
    },
    reset(now: number) {
      stats = new PerfStats(expected, now)
      seen = new Set()
      received = 0
      duplicates = 0
      lastAt = now
    }
  }
}

/** The send time a stamped record carries: `performance.now()` as text, up to the first space. */
export function readStamp(body: Buffer): number | undefined {
  const end = body.indexOf(0x20)
  const value = Number(body.subarray(0, end < 0 ? Math.min(body.length, 32) : end).toString('latin1'))
  return Number.isFinite(value) && value > 0 ? value : undefined
}
