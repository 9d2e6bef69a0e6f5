/** Kafka's tools count a megabyte as 1024 × 1024 bytes. */
export const MB = 1024 * 1024

/** Latencies kept for the percentiles at most; beyond it every n-th is sampled, as Kafka's tool does. */
export const MAX_LATENCY_SAMPLES = 500_000

/** One reporting window, or the whole run. */
export interface PerfSummary {
  readonly records: number
  readonly bytes: number
  readonly elapsedMs: number
  readonly avgLatencyMs: number
  readonly maxLatencyMs: number
}

export interface Percentiles {
  readonly p50: number
  readonly p95: number
  readonly p99: number
  readonly p999: number
}

/**
 * Latency and throughput bookkeeping in the shape of Kafka's ProducerPerformance: a running window, printed
 * and reset every reporting interval, and totals with sampled latencies for the percentiles. Pure: the
 * caller passes the clock.
 */
export class PerfStats {
  readonly #start: number
  readonly #sampling: number
  readonly #samples: number[] = []
  #count = 0
  #bytes = 0
  #totalLatency = 0
  #maxLatency = 0
  #windowStart: number
  #windowCount = 0
  #windowBytes = 0
  #windowLatency = 0
  #windowMax = 0

  /** `expected` is the number of records the run will record, to choose the sampling step. */
  constructor(expected: number, start: number) {
    this.#start = start
    this.#windowStart = start
    this.#sampling = Math.max(1, Math.floor(expected / Math.min(Math.max(expected, 1), MAX_LATENCY_SAMPLES)))
  }

  get count(): number {
    return this.#count
  }

  /** One record acknowledged after `latencyMs`. */
  record(latencyMs: number, bytes: number): void {
    if (this.#count % this.#sampling === 0) this.#samples.push(latencyMs)
    this.#count++
    this.#bytes += bytes
    this.#totalLatency += latencyMs
    this.#maxLatency = Math.max(this.#maxLatency, latencyMs)
    this.#windowCount++
    this.#windowBytes += bytes
    this.#windowLatency += latencyMs
    this.#windowMax = Math.max(this.#windowMax, latencyMs)
  }

  /** The window since the last call, and starts a new one. */
  takeWindow(now: number): PerfSummary {
    const summary = {
      records: this.#windowCount,
      bytes: this.#windowBytes,
      elapsedMs: now - this.#windowStart,
      avgLatencyMs: this.#windowCount === 0 ? 0 : this.#windowLatency / this.#windowCount,
      maxLatencyMs: this.#windowMax
    }
    this.#windowStart = now
    this.#windowCount = 0
    this.#windowBytes = 0
    this.#windowLatency = 0
    this.#windowMax = 0
    return summary
  }

  /** Everything since the start. */
  total(now: number): PerfSummary {
    return {
      records: this.#count,
      bytes: this.#bytes,
      elapsedMs: now - this.#start,
      avgLatencyMs: this.#count === 0 ? 0 : this.#totalLatency / this.#count,
      maxLatencyMs: this.#maxLatency
    }
  }

  percentiles(): Percentiles {
    const sorted = Float64Array.from(this.#samples).sort()
    return {
      p50: percentile(sorted, 0.5),
      p95: percentile(sorted, 0.95),
      p99: percentile(sorted, 0.99),
      p999: percentile(sorted, 0.999)
    }
  }
}

/** The value at rank floor(q × n) of sorted samples, as Kafka's tool picks it (0 when there are none). */
export function percentile(sorted: ArrayLike<number>, q: number): number {
  if (sorted.length === 0) return 0
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!
}

function rate(amount: number, elapsedMs: number): number {
  return elapsedMs <= 0 ? 0 : (amount * 1000) / elapsedMs
}

/** `N records sent, X records/sec (Y MB/sec), A ms avg latency, M ms max latency.` — Kafka's window line. */
export function formatWindow(s: PerfSummary): string {
  return (
    `${s.records} records sent, ${rate(s.records, s.elapsedMs).toFixed(1)} records/sec ` +
    `(${(rate(s.bytes, s.elapsedMs) / MB).toFixed(2)} MB/sec), ${s.avgLatencyMs.toFixed(1)} ms avg latency, ` +
    `${s.maxLatencyMs.toFixed(1)} ms max latency.`
  )
}

/** Kafka's final line: the totals and the 50th, 95th, 99th and 99.9th percentiles in whole milliseconds. */
export function formatTotal(s: PerfSummary, p: Percentiles): string {
  return (
    `${s.records} records sent, ${rate(s.records, s.elapsedMs).toFixed(6)} records/sec ` +
    `(${(rate(s.bytes, s.elapsedMs) / MB).toFixed(2)} MB/sec), ${s.avgLatencyMs.toFixed(2)} ms avg latency, ` +
    `${s.maxLatencyMs.toFixed(2)} ms max latency, ${Math.trunc(p.p50)} ms 50th, ${Math.trunc(p.p95)} ms 95th, ` +
    `${Math.trunc(p.p99)} ms 99th, ${Math.trunc(p.p999)} ms 99.9th.`
  )
}

/** The figures of a final line, parsed back (for benchmarks and tests comparing tools). */
export interface ParsedTotal {
  readonly records: number
  readonly recordsPerSec: number
  readonly mbPerSec: number
  readonly avgLatencyMs: number
  readonly maxLatencyMs: number
  readonly p50: number
  readonly p95: number
  readonly p99: number
  readonly p999: number
}

const TOTAL_LINE =
  /^(\d+) records sent, ([\d.]+) records\/sec \(([\d.]+) MB\/sec\), ([\d.]+) ms avg latency, ([\d.]+) ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th, (\d+) ms 99\.9th\.$/m

/** Finds and parses the final line of `shoal perf produce` or kafka-producer-perf-test output. */
export function parseTotal(output: string): ParsedTotal | undefined {
  const m = TOTAL_LINE.exec(output)
  if (!m) return undefined
  const n = m.slice(1).map(Number)
  return {
    records: n[0]!,
    recordsPerSec: n[1]!,
    mbPerSec: n[2]!,
    avgLatencyMs: n[3]!,
    maxLatencyMs: n[4]!,
    p50: n[5]!,
    p95: n[6]!,
    p99: n[7]!,
    p999: n[8]!
  }
}
