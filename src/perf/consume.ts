import { randomUUID } from 'node:crypto'
import { Consumer } from '@platformatic/kafka'
import { MB } from './perf-stats.ts'

export interface ConsumePerfOptions {
  readonly brokers: readonly string[]
  readonly topic: string
  readonly numRecords: number
  /** The consumer group; a fresh one by default, so every run reads the topic from the start. */
  readonly group?: string
  /** Start at the end of the topic instead of its beginning (for a fresh group). */
  readonly fromLatest?: boolean
  /** Give up when no record came for this long (Kafka's --timeout, default 10 s). */
  readonly timeoutMs?: number
  readonly reportIntervalMs?: number
  readonly onInterval?: (interval: ConsumeInterval) => void
  readonly onProgress?: (consumed: number) => void
  readonly signal?: AbortSignal
}

/** One reporting interval of `--show-detailed-stats`. */
export interface ConsumeInterval {
  readonly at: number
  readonly records: number
  readonly bytes: number
  readonly elapsedMs: number
}

export interface ConsumePerfResult {
  readonly startMs: number
  readonly endMs: number
  readonly records: number
  readonly bytes: number
  /** From the start until the group assigned partitions. */
  readonly rebalanceMs: number
  /** The rest: fetching and handling records. */
  readonly fetchMs: number
  readonly timedOut: boolean
}

export const DEFAULT_CONSUME_TIMEOUT_MS = 10_000

/** Consumes `numRecords` records of a topic in one group member and measures it as kafka-consumer-perf-test does. */
export async function consumePerf(options: ConsumePerfOptions): Promise<ConsumePerfResult> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_CONSUME_TIMEOUT_MS
  const reportEvery = options.reportIntervalMs ?? 5_000
  const consumer = new Consumer({
    clientId: 'shoal-perf-consumer',
    groupId: options.group ?? `shoal-perf-consumer-${randomUUID()}`,
    bootstrapBrokers: [...options.brokers],
    autocommit: 1_000,
    retries: 5,
    retryDelay: 200
  })
  const startMs = Date.now()
  let records = 0
  let bytes = 0
  try {
    const stream = await consumer.consume({
      topics: [options.topic],
      mode: options.fromLatest === true ? 'latest' : 'committed',
      fallbackMode: options.fromLatest === true ? 'latest' : 'earliest'
    })
    const joinedMs = Date.now()
    let lastRecordAt = joinedMs
    let last = { at: joinedMs, records: 0, bytes: 0 }
    const timedOut = await new Promise<boolean>((resolve, reject) => {
      const check = setInterval(() => {
        const now = Date.now()
        if (now - last.at >= reportEvery) {
          options.onInterval?.({
            at: now,
            records: records - last.records,
            bytes: bytes - last.bytes,
            elapsedMs: now - last.at
          })
          last = { at: now, records, bytes }
        }
        if (now - lastRecordAt >= timeoutMs) finish(true)
      }, 100)
      const onAbort = () => finish(false)
      options.signal?.addEventListener('abort', onAbort, { once: true })
      const finish = (timeout: boolean) => {
        clearInterval(check)
        options.signal?.removeEventListener('abort', onAbort)
        stream.removeAllListeners('data')
        resolve(timeout)
      }
      stream.on('data', message => {
        if (records >= options.numRecords) return
        records++
        bytes += (message.value?.length ?? 0) + (message.key?.length ?? 0)
        lastRecordAt = Date.now()
        options.onProgress?.(records)
        if (records >= options.numRecords) finish(false)
      })
      stream.once('error', error => {
        clearInterval(check)
        reject(error)
      })
    })
    const endMs = lastRecordAt
    await stream.close().catch(() => undefined)
    return {
      startMs,
      endMs,
      records,
      bytes,
      rebalanceMs: joinedMs - startMs,
      fetchMs: endMs - joinedMs,
      timedOut
    }
  } finally {
    await consumer.close(true).catch(() => undefined)
  }
}

/** Kafka's consumer-perf-test header (without `--show-detailed-stats`). */
export const CONSUME_HEADER =
  'start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec'

/** The header of `--show-detailed-stats` lines. */
export const CONSUME_DETAIL_HEADER = 'time, threadId, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec'

/** Kafka's summary line: `start, end, MB, MB/s, records, records/s, rebalance ms, fetch ms, fetch MB/s, fetch records/s`. */
export function formatConsumeTotal(r: ConsumePerfResult): string {
  const elapsed = (r.endMs - r.startMs) / 1000
  const fetch = r.fetchMs / 1000
  const mb = r.bytes / MB
  const per = (x: number, s: number) => (s <= 0 ? 0 : x / s).toFixed(4)
  return [
    formatTime(r.startMs),
    formatTime(r.endMs),
    mb.toFixed(4),
    per(mb, elapsed),
    String(r.records),
    per(r.records, elapsed),
    String(r.rebalanceMs),
    String(r.fetchMs),
    per(mb, fetch),
    per(r.records, fetch)
  ].join(', ')
}

/** One `--show-detailed-stats` line. */
export function formatConsumeInterval(i: ConsumeInterval): string {
  const seconds = i.elapsedMs / 1000
  const mb = i.bytes / MB
  return [
    formatTime(i.at),
    '0',
    mb.toFixed(4),
    (seconds <= 0 ? 0 : mb / seconds).toFixed(4),
    String(i.records),
    (seconds <= 0 ? 0 : i.records / seconds).toFixed(4)
  ].join(', ')
}

/** Kafka's date format for these tools, `yyyy-MM-dd HH:mm:ss:SSS`, in local time. */
export function formatTime(ms: number): string {
  const d = new Date(ms)
  const p = (n: number, w = 2) => String(n).padStart(w, '0')
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}:${p(d.getMilliseconds(), 3)}`
}
