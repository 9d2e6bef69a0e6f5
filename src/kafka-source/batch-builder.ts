import type { QueuedRecord } from './partition-run.ts'
import type { BatchLimits, SourceRecord } from './types.ts'

// Which of a partition's queued records make its next batch (delivery.shoal.dev/batch-* annotations). Pure:
// the queue, the limits and the time in, a decision out.

/** Send the next `count` queued records as one batch, or wait for more until `at` (`performance.now()` time). */
export type BatchDecision =
  { readonly kind: 'send'; readonly count: number } | { readonly kind: 'wait'; readonly at: number }

/**
 * The next batch from `queue[head…]` (at least one record must be queued). A batch is full at `maxEvents`
 * records, or when the next record would take it past `maxBytes` (a record bigger than that alone goes alone).
 * A batch not full waits for more records until `maxWaitMs` after its first record was fetched, then goes as it is.
 */
export function nextBatch(
  queue: ReadonlyArray<QueuedRecord | undefined>,
  head: number,
  limits: BatchLimits,
  now: number
): BatchDecision {
  let count = 0
  let bytes = 0
  for (let i = head; i < queue.length && count < limits.maxEvents; i++) {
    const size = recordBytes((queue[i] as QueuedRecord).record)
    if (count > 0 && bytes + size > limits.maxBytes) return { kind: 'send', count }
    count++
    bytes += size
  }
  if (count >= limits.maxEvents || bytes >= limits.maxBytes) return { kind: 'send', count }
  const first = (queue[head] as QueuedRecord).record.fetchedAt
  const at = first === undefined ? now : first + limits.maxWaitMs
  return at <= now ? { kind: 'send', count } : { kind: 'wait', at }
}

/** Whether a partition's unstarted records are a batch still waiting for more (so its partition is fetched again). */
export function batchOpen(queued: number, limits: BatchLimits): boolean {
  return queued > 0 && queued < limits.maxEvents
}

/** What a record weighs against `maxBytes`: its key, value and header bytes. */
export function recordBytes(record: SourceRecord): number {
  let bytes = (record.key?.length ?? 0) + (record.value?.length ?? 0)
  for (const [name, value] of record.headers) bytes += name.length + (value?.length ?? 0)
  return bytes
}
