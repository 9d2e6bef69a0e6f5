import type { CloudEvent, Deliverer, DeliveryOutcome, DeliveryTarget } from '../delivery/index.ts'
import { eventBatch } from '../delivery/index.ts'
import { recordToEvent } from './record-to-event.ts'
import type { MappingOptions, SourceRef } from './record-to-event.ts'
import type { Outcome, SourceRecord } from './types.ts'

/** Sends a batch of one partition's records to a target; resolves to each record's outcome, in order. */
export type BatchSend = (
  records: readonly SourceRecord[],
  signal: AbortSignal,
  wireSignal: AbortSignal,
  target: DeliveryTarget
) => Promise<readonly Outcome[]>

/**
 * A batch's records as one batched-mode request through `deliverer`, retried and dead-lettered as a whole
 * under the target's policy. A poison record among them goes to the dead letter sink on its own, as it does
 * without batches. It rejects — the whole batch is not handled, and is delivered again — when any part was
 * aborted; it settles only once every part has, so a batch is never sent twice at the same time.
 */
export function batchDelivery(deliverer: Deliverer, ref: SourceRef, options: MappingOptions): BatchSend {
  return async (records, signal, wireSignal, target) => {
    const events: CloudEvent[] = []
    const eventAt: number[] = []
    const parts: Array<Promise<void>> = []
    const outcomes = new Array<Outcome>(records.length)
    records.forEach((record, i) => {
      const mapped = recordToEvent(record, ref, options)
      if (mapped.kind === 'event') {
        events.push(mapped.event)
        eventAt.push(i)
      } else {
        const letter = deliverer.deadLetter(mapped.fallback, target, mapped.reason, signal, wireSignal)
        parts.push(letter.then(outcome => void (outcomes[i] = handled(outcome))))
      }
    })
    if (events.length > 0) {
      const sent = deliverer.deliver(eventBatch(events), target, signal, wireSignal, records[0]?.fetchedAt)
      parts.push(
        sent.then(outcome => {
          const each = handled(outcome)
          for (const i of eventAt) outcomes[i] = each
        })
      )
    }
    const settled = await Promise.allSettled(parts)
    const failed = settled.find(result => result.status === 'rejected')
    if (failed !== undefined) throw failed.reason
    return outcomes
  }
}

function handled(outcome: DeliveryOutcome): Outcome {
  if (outcome.kind === 'aborted') throw new Error('delivery aborted')
  return outcome.kind
}
