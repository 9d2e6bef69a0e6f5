// The wait before a retry, as Knative's KafkaSource dispatcher computes it: retry n (1 for the first retry)
// waits backoffDelay·n (linear) or backoffDelay·2^n (exponential).

export type BackoffPolicy = 'linear' | 'exponential'

/** The longest wait a timer can express (setTimeout's limit, about 24.8 days); longer waits are clamped to it. */
export const MAX_TIMER_MS = 2 ** 31 - 1

/** Milliseconds to wait before retry number `retry` (1-based). */
export function backoffDelay(policy: BackoffPolicy, delayMs: number, retry: number): number {
  if (retry < 1 || delayMs <= 0) return 0
  const ms = policy === 'linear' ? delayMs * retry : delayMs * 2 ** retry
  return Math.min(ms, MAX_TIMER_MS)
}

/** The waits before retries 1…`retries`, in order. */
export function backoffSchedule(policy: BackoffPolicy, delayMs: number, retries: number): number[] {
  return Array.from({ length: retries }, (_, i) => backoffDelay(policy, delayMs, i + 1))
}
