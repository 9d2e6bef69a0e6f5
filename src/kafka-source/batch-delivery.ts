import { DELIVER_ERROR_BACKOFF_MS } from './defaults.ts'
import type { MemberContext } from './member-context.ts'
import type { PartitionRun, QueuedRecord } from './partition-run.ts'
import type { DeliverBatch, Outcome } from './types.ts'
import { sleep } from './wake.ts'

/** What the delivery window learns from a batch: its records' outcomes, each throwing try, and its end. */
export interface BatchReports {
  handled(outcome: Outcome): void
  deliverError(): void
  ended(): void
}

/**
 * Delivers one batch of `run`'s records until every record of it is handled, or its partition leaves. The batch
 * is one unit: a `deliver` that throws (or is aborted) leaves all of it unhandled and it is tried again whole
 * after a backoff (doubling), so the commit — the contiguous handled prefix — moves past all of it or none.
 */
export function deliverBatch(
  ctx: MemberContext,
  run: PartitionRun,
  items: readonly QueuedRecord[],
  deliver: DeliverBatch,
  reports: BatchReports
): void {
  for (const item of items) item.tracker.handed(item.entry)
  const records = items.map(item => item.record)
  const attempt = (backoff: number): void => {
    const signal = run.stop.signal
    if (signal.aborted) {
      reports.ended()
      return
    }
    let delivering: Promise<readonly Outcome[]>
    try {
      delivering = deliver(records, signal, run.wire.signal)
    } catch (error) {
      delivering = Promise.reject(error)
    }
    delivering.then(
      outcomes => {
        items.forEach((item, i) => {
          reports.handled(outcomes[i] ?? 'delivered')
          item.tracker.handled(item.entry)
        })
        reports.ended()
      },
      async (error: unknown) => {
        if (!signal.aborted) {
          reports.deliverError()
          const first = records[0]
          ctx.options.log(
            'warn',
            'deliver failed; retrying the batch',
            ctx.fields({
              error,
              topic: run.topic,
              partition: run.partition,
              offset: String(first?.offset),
              records: records.length
            })
          )
          await sleep(backoff, signal)
        }
        attempt(Math.min(backoff * 2, DELIVER_ERROR_BACKOFF_MS.max))
      }
    )
  }
  attempt(DELIVER_ERROR_BACKOFF_MS.first)
}
