import type { ContractRecord, ScheduleWatermark } from '../store/index.ts'
import type { ScheduleTable } from './schedule-table.ts'
import { MAX_NAMED, RELEASE_HOLD_MS, compactWatermark } from './watermark.ts'
import type { TickLedger } from './tick-ledger.ts'
import type { Holder } from './watermark-book.ts'

/**
 * How a schedule changes hands between dispatchers, the pure part (docs/ping-source.md#hand-over): what a
 * dispatcher's heartbeat says of its schedules, what it does when one leaves it, and whom a new owner asks.
 * The PingSource plane and the hand-over model test both run these.
 */

/**
 * The watermark of a heartbeat: how far the schedules in `table` are handled (fired through, and those with ticks
 * out), those given up lately (`ledger`'s releases), those of the contract not started (`pending`), and the
 * contract offset all this is true of; `waiting`, the schedules whose sink does not resolve (named as not started
 * when the exceptions are too many: see compactWatermark).
 * Lists longer than MAX_NAMED are cut, and the watermark says so.
 */
export function heartbeatWatermark(
  table: ScheduleTable,
  ledger: TickLedger,
  pending: readonly string[],
  contractOffset: bigint,
  now: number,
  waiting: ReadonlySet<string> = new Set()
): ScheduleWatermark {
  const through = table.through
  const released = ledger.releases(now)
  const exceptions = ledger.exceptions(through)
  const { held, ...compact } = compactWatermark(through, exceptions, undefined, waiting)
  const unstarted = held === undefined ? pending : [...pending, ...held]
  const cut = unstarted.length > MAX_NAMED
  const named = cut ? unstarted.slice(0, MAX_NAMED) : unstarted
  return {
    ...compact,
    ...(Object.keys(released.named).length === 0 ? {} : { released: released.named }),
    ...(named.length === 0 ? {} : { pending: named }),
    contractOffset: String(contractOffset),
    ...(cut || released.cut ? { partial: true as const } : {})
  }
}

/** Ticks in flight a release names as owed at most; below more, it releases below them (they are fired again). */
export const MAX_OWED = 16

/**
 * `key` left this dispatcher, which had held it since contract offset `heldSince`: it stops firing it (`table`
 * no longer holds it) and names at once how far that holding handled it — through the last tick it fired, with
 * the ticks of `inFlight` (sent, not answered) named owed: it is alive and still delivers them, so its next
 * owner starts after them and fires them only if it stops first (a live move fires nothing twice). Ticks fired
 * and not sent yet are not owed: the release is below them. A holding it never started is released with null:
 * its next owner asks the holder before.
 */
export function releaseSchedule(
  table: ScheduleTable,
  ledger: TickLedger,
  key: string,
  heldSince: bigint,
  now: number,
  inFlight: readonly number[]
): void {
  const firedThrough = table.firedThrough(key)
  if (firedThrough === undefined) {
    ledger.release(key, null, heldSince, now + RELEASE_HOLD_MS)
    return
  }
  table.delete(key)
  const sent = new Set(inFlight)
  let through = firedThrough
  for (const at of ledger.openOf(key)) if (!sent.has(at)) through = Math.min(through, at - 1)
  let owed = inFlight.filter(at => at <= through).sort((a, b) => a - b)
  if (owed.length > MAX_OWED) {
    through = owed[MAX_OWED]! - 1
    owed = owed.slice(0, MAX_OWED)
  }
  ledger.release(key, through, heldSince, now + RELEASE_HOLD_MS, owed)
  ledger.forget(key)
}

/**
 * The holdings an apply of the contract ends: those of the previous contract that went or were given again (a
 * new `heldSince`), and those given and taken between two applies (`ended`, from the contract state) — each to
 * be released (`releaseSchedule`), so that a heartbeat reflecting the new contract names it.
 */
export function endedHoldings(
  previous: ReadonlyMap<string, ContractRecord>,
  next: ReadonlyMap<string, ContractRecord>,
  ended: ReadonlyArray<{ readonly source: string; readonly heldSince: string }>
): Array<{ readonly key: string; readonly heldSince: bigint }> {
  const out: Array<{ key: string; heldSince: bigint }> = []
  for (const [key, placement] of previous) {
    const now = next.get(key)
    if (now === undefined || now.heldSince !== placement.heldSince) {
      out.push({ key, heldSince: BigInt(placement.heldSince ?? '0') })
    }
  }
  for (const { source, heldSince } of ended) {
    if (!source.startsWith('PingSource/') || previous.get(source)?.heldSince === heldSince) continue
    out.push({ key: source, heldSince: BigInt(heldSince) })
  }
  return out
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
