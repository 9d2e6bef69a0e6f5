import type { ContractRecord } from '../store/records.ts'
import type { ScheduleTable } from './schedule-table.ts'
import { MAX_NAMED, RELEASE_HOLD_MS, compactWatermark } from './watermark.ts'
import type { Holder, ScheduleWatermark, TickLedger } from './watermark.ts'

/**
 * How a schedule changes hands between dispatchers, the pure part (docs/ping-source.md#hand-over): what a
 * dispatcher's heartbeat says of its schedules, what it does when one leaves it, and whom a new owner asks.
 * The PingSource plane and the hand-over model test both run these.
 */

/**
 * The watermark of a heartbeat: how far the schedules in `table` are handled (fired through, and those with ticks
 * out), those given up lately (`ledger`'s releases), those of the contract not started (`pending`), and the
 * contract offset all this is true of. Lists longer than MAX_NAMED are cut, and the watermark says so.
 */
export function heartbeatWatermark(
  table: ScheduleTable,
  ledger: TickLedger,
  pending: readonly string[],
  contractOffset: bigint,
  now: number
): ScheduleWatermark {
  const through = table.through
  const cut = pending.length > MAX_NAMED
  const named = cut ? pending.slice(0, MAX_NAMED) : pending
  const released = ledger.releases(now)
  return {
    ...compactWatermark(through, ledger.exceptions(through)),
    ...(Object.keys(released.named).length === 0 ? {} : { released: released.named }),
    ...(named.length === 0 ? {} : { pending: named }),
    contractOffset: String(contractOffset),
    ...(cut || released.cut ? { partial: true as const } : {})
  }
}

/**
 * `key` left this dispatcher, which had held it since contract offset `heldSince`: it stops firing it (`table`
 * no longer holds it) and its heartbeats name how far that holding handled it — below ticks still in flight,
 * which the next owner fires again. A holding it never started names the release of the last one it did start,
 * if it still holds that (nothing was fired here since), else that nothing is known. True if it was running.
 */
export function releaseSchedule(
  table: ScheduleTable,
  ledger: TickLedger,
  key: string,
  heldSince: bigint,
  now: number
): boolean {
  const firedThrough = table.firedThrough(key)
  if (firedThrough === undefined) {
    const before = ledger.releaseOf(key)
    if (before === undefined) ledger.release(key, null, heldSince, now + RELEASE_HOLD_MS)
    else ledger.release(key, before.at, before.heldSince, now + RELEASE_HOLD_MS)
    return false
  }
  ledger.release(key, ledger.watermarkOf(key, firedThrough), heldSince, now + RELEASE_HOLD_MS)
  ledger.forget(key)
  table.delete(key)
  return true
}

/**
 * Who held `placement`'s schedule before, newest first: this dispatcher's own earlier incarnations (it has held
 * the schedule since `heldSince`, which the dispatcher's contract state always sets), then the dispatchers the
 * schedule moved from.
 */
export function holdersOf(self: string, placement: ContractRecord): Holder[] {
  const own: Holder = {
    dispatcher: self,
    offset: BigInt(placement.heldSince ?? '0'),
    incarnation: Number.POSITIVE_INFINITY,
    leftAtMs: Number.POSITIVE_INFINITY
  }
  return [
    own,
    ...(placement.movedFrom ?? []).map(m => ({
      dispatcher: m.dispatcher,
      offset: m.offset === undefined ? -1n : BigInt(m.offset),
      incarnation: m.incarnation ?? -1,
      leftAtMs: Date.parse(m.at)
    }))
  ]
}
