import { Admin } from '@platformatic/kafka'
import { setTimeout as delay } from 'node:timers/promises'

export interface WaitForBrokerOptions {
  /** `host:port` of the broker to ask. */
  readonly address: string
  /** Ready once the broker's metadata lists at least this many live brokers. */
  readonly expectedBrokers: number
  /** Epoch milliseconds after which waiting fails. */
  readonly deadline: number
  readonly signal?: AbortSignal
}

/** What the last attempt saw, for the error when the deadline passes. */
export type ReadyOutcome = { readonly kind: 'ready' } | { readonly kind: 'timeout'; readonly lastError: string }

/**
 * Waits until the broker at `address` accepts a Kafka connection and answers a metadata request listing the
 * expected number of brokers (a broker that is up but not yet registered and unfenced is not listed).
 */
export async function waitForBroker(options: WaitForBrokerOptions): Promise<ReadyOutcome> {
  let lastError = 'no answer yet'
  while (Date.now() < options.deadline) {
    options.signal?.throwIfAborted()
    const remaining = options.deadline - Date.now()
    const admin = new Admin({
      clientId: 'shoal-embedded-kafka-ready',
      bootstrapBrokers: [options.address],
      timeout: Math.max(500, Math.min(5_000, remaining)),
      connectTimeout: Math.max(500, Math.min(2_000, remaining)),
      retries: 0
    })
    try {
      const metadata = await admin.metadata({ topics: [] })
      if (metadata.brokers.size >= options.expectedBrokers) return { kind: 'ready' }
      lastError = `metadata lists ${metadata.brokers.size} of ${options.expectedBrokers} brokers`
    } catch (error) {
      lastError = describe(error)
    } finally {
      await admin.close().catch(() => {})
    }
    await delay(Math.min(250, Math.max(0, options.deadline - Date.now())), undefined, {
      ...(options.signal ? { signal: options.signal } : {})
    })
  }
  return { kind: 'timeout', lastError }
}

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error)
  const nested = (error as Error & { errors?: unknown[] }).errors
  const first = Array.isArray(nested) && nested[0] instanceof Error ? `: ${nested[0].message}` : ''
  return `${error.message}${first}`
}
