import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import { Producer } from '@platformatic/kafka'
import type { MessageToProduce } from '@platformatic/kafka'
import { PerfStats } from './perf-stats.ts'
import type { PerfSummary, Percentiles } from './perf-stats.ts'
import { randomPayload } from './payload.ts'
import { throttleDelay } from './throttle.ts'

/** Kafka's acks setting: -1 is `all`. */
export type Acks = -1 | 0 | 1

export interface ProducePerfOptions {
  readonly brokers: readonly string[]
  readonly topic: string
  readonly numRecords: number
  readonly recordSize: number
  /** Records per second at most; -1 for as fast as it goes. */
  readonly throughput: number
  readonly acks: Acks
  /** Bytes gathered before a batch is sent (Kafka's batch.size, default 16384). */
  readonly batchBytes?: number
  /** How long a batch waits to fill (Kafka's linger.ms, default 5). */
  readonly lingerMs?: number
  /** Produce requests in flight at once (Kafka's max.in.flight.requests.per.connection, default 5). */
  readonly maxInFlight?: number
  readonly clientId?: string
  /** How often a window line is due (Kafka's tool: 5 s). */
  readonly reportIntervalMs?: number
  readonly onWindow?: (window: PerfSummary) => void
  readonly onProgress?: (acknowledged: number) => void
  readonly signal?: AbortSignal
  /** Start each payload with its send time (`performance.now()` in ms, then a space), for `shoal perf e2e`. */
  readonly stamp?: boolean
}

export interface ProducePerfResult {
  readonly total: PerfSummary
  readonly percentiles: Percentiles
}

export const DEFAULT_BATCH_BYTES = 16_384
export const DEFAULT_LINGER_MS = 5
export const DEFAULT_MAX_IN_FLIGHT = 5
export const DEFAULT_REPORT_INTERVAL_MS = 5_000

type Message = MessageToProduce<Buffer, Buffer, Buffer, Buffer>

/**
 * Produces `numRecords` records of `recordSize` bytes as Kafka's ProducerPerformance does: one payload of random
 * letters, the send time of each record kept until its batch is acknowledged, and records gathered into batches
 * by size and linger (the client sends what it is given at once, so the batching Kafka's producer does inside is
 * done here), with at most `maxInFlight` produce requests outstanding.
 */
export async function producePerf(options: ProducePerfOptions): Promise<ProducePerfResult> {
  const batchBytes = options.batchBytes ?? DEFAULT_BATCH_BYTES
  const lingerMs = options.lingerMs ?? DEFAULT_LINGER_MS
  const maxInFlight = options.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT
  const reportEvery = options.reportIntervalMs ?? DEFAULT_REPORT_INTERVAL_MS
  const producer = perfProducer(options)
  const payload = randomPayload(options.recordSize)
  const start = performance.now()
  const stats = new PerfStats(options.numRecords, start)
  let nextReport = start + reportEvery
  let failure: { error: unknown } | undefined
  const inFlight = new Set<Promise<void>>()
  let messages: Message[] = []
  let sentAt: number[] = []
  let bytes = 0
  let linger: NodeJS.Timeout | undefined
  let lingerDue = false

  const flush = () => {
    clearTimeout(linger)
    linger = undefined
    lingerDue = false
    if (messages.length === 0) return
    const batch = messages
    const times = sentAt
    messages = []
    sentAt = []
    bytes = 0
    const sending = producer.send({ messages: batch, acks: options.acks }).then(
      () => {
        const now = performance.now()
        for (const t of times) stats.record(now - t, options.recordSize)
        options.onProgress?.(stats.count)
        if (now >= nextReport) {
          options.onWindow?.(stats.takeWindow(now))
          nextReport = now + reportEvery
        }
      },
      error => {
        failure ??= { error }
      }
    )
    const tracked: Promise<void> = sending.finally(() => {
      inFlight.delete(tracked)
      if (lingerDue && inFlight.size < maxInFlight) flush()
    })
    inFlight.add(tracked)
  }

  try {
    for (let i = 0; i < options.numRecords; i++) {
      if (failure !== undefined) throw failure.error
      options.signal?.throwIfAborted()
      const wait = throttleDelay(i, performance.now() - start, options.throughput)
      if (wait > 0) {
        // Waiting for the throttle is the time a lingering batch goes out anyway.
        if (messages.length > 0 && inFlight.size < maxInFlight) flush()
        await sleep(wait)
      }
      while (inFlight.size >= maxInFlight) await Promise.race(inFlight)
      const now = performance.now()
      messages.push({ topic: options.topic, value: options.stamp === true ? stamped(payload, now) : payload })
      sentAt.push(now)
      bytes += options.recordSize
      if (bytes >= batchBytes) flush()
      else if (messages.length === 1)
        linger = setTimeout(() => {
          lingerDue = true
          if (inFlight.size < maxInFlight) flush()
        }, lingerMs)
    }
    flush()
    while (inFlight.size > 0) await Promise.race(inFlight)
    if (failure !== undefined) throw failure.error
    const end = performance.now()
    return { total: stats.total(end), percentiles: stats.percentiles() }
  } finally {
    clearTimeout(linger)
    await Promise.allSettled(inFlight)
    await producer.close().catch(() => undefined)
  }
}

/** The client producePerf sends with, set as Kafka's producer is by default. */
function perfProducer(options: ProducePerfOptions): Producer<Buffer, Buffer, Buffer, Buffer> {
  return new Producer({
    clientId: options.clientId ?? 'shoal-perf-producer',
    bootstrapBrokers: [...options.brokers],
    autocreateTopics: true,
    // As Kafka's producer does by default with acks=all: a retried batch is not written twice.
    idempotent: options.acks === -1,
    retries: 5,
    retryDelay: 200
  })
}

/** A copy of the payload that starts with the send time and a space (longer than the payload if it must be). */
export function stamped(payload: Buffer, sentAt: number): Buffer {
  const stamp = Buffer.from(`${sentAt.toFixed(3)} `, 'latin1')
  if (stamp.length >= payload.length) return stamp
  const value = Buffer.from(payload)
  stamp.copy(value)
  return value
}
