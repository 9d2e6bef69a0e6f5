import type { DeliveryOutcome } from './delivery-outcome.ts'
import { statusClass } from './retriable.ts'

// Hooks the deliverer calls as it works, for metrics: every attempt, every retry, every outcome. DeliveryCounters
// is a ready implementation that keeps totals per source; a Prometheus exporter can implement the hooks directly.

/** Which endpoint an attempt went to. */
export type Endpoint = 'sink' | 'dead-letter'

export interface AttemptInfo {
  readonly sourceKey: string
  readonly endpoint: Endpoint
  /** 1 for the first attempt at this endpoint. */
  readonly attempt: number
  /** The response status; absent when no response came (network error, timeout). */
  readonly status?: number
  /** Why no response came. */
  readonly error?: string
  /** Nothing was sent: why (`error`) is Shoal's, such as no OIDC token for the sink yet. */
  readonly notSent?: true
  /** From the request being sent (a connection slot held) to its answer. */
  readonly durationMs: number
  /**
   * The first sink attempt of a record whose fetch time is known, once its request was written: from the record
   * being fetched to its request handed to the socket (queueing in the delivery window and for a connection
   * slot, mapping, and connecting included).
   */
  readonly dispatchDelayMs?: number
}

export interface RetryInfo {
  readonly sourceKey: string
  readonly endpoint: Endpoint
  /** The retry about to be waited for: 1 for the first. */
  readonly retry: number
  /** The wait computed before it (backoff or Retry-After). */
  readonly delayMs: number
}

export interface OutcomeInfo {
  readonly sourceKey: string
  readonly outcome: DeliveryOutcome
  /** From deliver() being called to the outcome, queueing, retries and dead-lettering included. */
  readonly latencyMs: number
  /** Events the outcome is for: a batch's events (delivered, dead-lettered or dropped together); absent: 1. */
  readonly events?: number
}

/** Metrics hooks; each optional, each called synchronously and must not throw. */
export interface DeliveryObserver {
  onAttempt?(info: AttemptInfo): void
  onRetry?(info: RetryInfo): void
  onOutcome?(info: OutcomeInfo): void
}

/** Attempts by what came back: a status class, or `error` for no response. */
export type AttemptClass = '1xx' | '2xx' | '3xx' | '4xx' | '5xx' | 'error'

/** One source's totals. */
export interface SourceCounts {
  readonly attempts: Readonly<Record<AttemptClass, number>>
  readonly deadLetterAttempts: Readonly<Record<AttemptClass, number>>
  readonly retries: number
  readonly delivered: number
  readonly deadLettered: number
  readonly dropped: number
  readonly aborted: number
  readonly latency: { readonly count: number; readonly sumMs: number; readonly maxMs: number }
}

interface MutableCounts {
  attempts: Record<AttemptClass, number>
  deadLetterAttempts: Record<AttemptClass, number>
  retries: number
  delivered: number
  deadLettered: number
  dropped: number
  aborted: number
  latency: { count: number; sumMs: number; maxMs: number }
}

/** Totals per source key, kept in memory. */
export class DeliveryCounters implements DeliveryObserver {
  readonly #bySource = new Map<string, MutableCounts>()

  onAttempt(info: AttemptInfo): void {
    const counts = this.#counts(info.sourceKey)
    const cls: AttemptClass = info.status === undefined ? 'error' : statusClass(info.status)
    const table = info.endpoint === 'sink' ? counts.attempts : counts.deadLetterAttempts
    table[cls]++
  }

  onRetry(info: RetryInfo): void {
    this.#counts(info.sourceKey).retries++
  }

  onOutcome(info: OutcomeInfo): void {
    const counts = this.#counts(info.sourceKey)
    const events = info.events ?? 1
    switch (info.outcome.kind) {
      case 'delivered':
        counts.delivered += events
        break
      case 'dead-lettered':
        counts.deadLettered += events
        break
      case 'dropped':
        counts.dropped += events
        break
      case 'aborted':
        counts.aborted++
        return
    }
    counts.latency.count++
    counts.latency.sumMs += info.latencyMs
    counts.latency.maxMs = Math.max(counts.latency.maxMs, info.latencyMs)
  }

  /** A copy of one source's totals (zeros when it has none). */
  get(sourceKey: string): SourceCounts {
    return structuredClone(this.#bySource.get(sourceKey) ?? emptyCounts())
  }

  /** A copy of every source's totals. */
  snapshot(): Map<string, SourceCounts> {
    return new Map([...this.#bySource].map(([key, counts]) => [key, structuredClone(counts)]))
  }

  /** Forgets a source (when it is deleted or moves to another dispatcher). */
  forget(sourceKey: string): void {
    this.#bySource.delete(sourceKey)
  }

  #counts(sourceKey: string): MutableCounts {
    let counts = this.#bySource.get(sourceKey)
    if (counts === undefined) {
      counts = emptyCounts()
      this.#bySource.set(sourceKey, counts)
    }
    return counts
  }
}

function emptyCounts(): MutableCounts {
  const classes = (): Record<AttemptClass, number> => ({ '1xx': 0, '2xx': 0, '3xx': 0, '4xx': 0, '5xx': 0, error: 0 })
  return {
    attempts: classes(),
    deadLetterAttempts: classes(),
    retries: 0,
    delivered: 0,
    deadLettered: 0,
    dropped: 0,
    aborted: 0,
    latency: { count: 0, sumMs: 0, maxMs: 0 }
  }
}
