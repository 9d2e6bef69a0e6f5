import type { RateLimit } from './tokens.ts'

/** The verdict on one request. */
export type RateVerdict =
  { readonly kind: 'allowed' } | { readonly kind: 'limited'; readonly retryAfterSeconds: number }

interface Bucket {
  tokens: number
  at: number
}

/**
 * A token bucket per key (one per token name): each request takes one token; tokens come back at
 * `requestsPerSecond` up to `burst`. Keys are the names in the tokens file, so memory is bounded by it.
 */
export class RateLimiter {
  readonly #buckets = new Map<string, Bucket>()
  readonly #now: () => number

  /** `now` in milliseconds; a monotonic clock by default. */
  constructor(now: () => number = () => performance.now()) {
    this.#now = now
  }

  take(key: string, limit: RateLimit): RateVerdict {
    const now = this.#now()
    let bucket = this.#buckets.get(key)
    if (bucket === undefined) {
      bucket = { tokens: limit.burst, at: now }
      this.#buckets.set(key, bucket)
    }
    const refill = ((now - bucket.at) / 1000) * limit.requestsPerSecond
    bucket.tokens = Math.min(limit.burst, bucket.tokens + Math.max(0, refill))
    bucket.at = now
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1
      return { kind: 'allowed' }
    }
    // Retry-After is whole seconds (RFC 9110): round up, so a client that waits it out gets a token.
    const retryAfterSeconds = Math.max(1, Math.ceil((1 - bucket.tokens) / limit.requestsPerSecond))
    return { kind: 'limited', retryAfterSeconds }
  }
}
