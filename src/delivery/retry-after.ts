// Retry-After (RFC 9110 §10.2.3): delay-seconds or an HTTP-date. Knative honours it on 429 and 503 only, waiting
// the longer of it (capped by retryAfterMax) and the backoff.

const ASCTIME = /^[A-Za-z]{3} [A-Za-z]{3} [ \d]\d \d{2}:\d{2}:\d{2} \d{4}$/

/** Milliseconds a Retry-After value asks to wait (0 for a date in the past), or undefined when it is not valid. */
export function parseRetryAfter(value: string | undefined, nowMs: number): number | undefined {
  if (value === undefined) return undefined
  const text = value.trim()
  if (/^\d+$/.test(text)) {
    const seconds = Number(text)
    return Number.isSafeInteger(seconds * 1000) ? seconds * 1000 : Number.MAX_SAFE_INTEGER
  }
  // IMF-fixdate, or the obsolete RFC 850 and asctime forms, all of which Date.parse reads.
  if (!/^[A-Za-z]{3}/.test(text)) return undefined
  // asctime has no zone and means GMT; Date.parse would read it as local time.
  const at = Date.parse(ASCTIME.test(text) ? `${text} GMT` : text)
  if (Number.isNaN(at)) return undefined
  return Math.max(0, at - nowMs)
}

/** Whether a status's Retry-After is honoured (as Knative: 429 Too Many Requests and 503 Service Unavailable). */
export function honoursRetryAfter(status: number): boolean {
  return status === 429 || status === 503
}

/**
 * The wait before a retry: the backoff, or the Retry-After delay when that is longer, capped by `maxMs`
 * (undefined: no cap; 0: the header is ignored).
 */
export function retryWait(backoffMs: number, retryAfterMs: number | undefined, maxMs: number | undefined): number {
  if (retryAfterMs === undefined || maxMs === 0) return backoffMs
  const capped = maxMs === undefined ? retryAfterMs : Math.min(retryAfterMs, maxMs)
  return Math.max(backoffMs, capped)
}
