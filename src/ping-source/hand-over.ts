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
 * contract offset all this is true of; `stopping`, the schedules that left with ticks in flight; `waiting`, those
 * whose sink does not resolve (named as not started when the exceptions are too many: see compactWatermark).
 * Lists longer than MAX_NAMED are cut, and the watermark says so.
 */
export function heartbeatWatermark(
  table: ScheduleTable,
  ledger: TickLedger,
  pending: readonly string[],
  contractOffset: bigint,
  now: number,
  stopping: ReadonlyMap<string, Stopping> = new Map(),
  waiting: ReadonlySet<string> = new Set()
): ScheduleWatermark {
  const through = table.through
  const released = ledger.releases(now)
  const exceptions = ledger.exceptions(through)
  // A schedule stopping is not named yet (its next owner waits); should this dispatcher die now, its exception
  // says how far it was handled, whatever `through` has reached since.
  for (const [key, stop] of stopping) {
    const at = ledger.watermarkOf(key, stop.firedThrough)
    exceptions.set(key, Math.min(at, exceptions.get(key) ?? at))
  }
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

/** How long a schedule that left waits for its ticks in flight before it is released below them (fired again). */
export const RELEASE_DRAIN_MS = 2_000

/** A schedule that left while ticks of it were in flight: released when they are answered, or at `until`. */
export interface Stopping {
  readonly heldSince: bigint
  readonly firedThrough: number
  readonly until: number
}

/**
 * `key` left this dispatcher, which had held it since contract offset `heldSince`: it stops firing it (`table`
 * no longer holds it). With no tick in flight its heartbeats name at once how far that holding handled it;
 * with some, it returns the Stopping to finish (`finishRelease`) when they are answered — meanwhile it names
 * nothing, so a new owner waits, and the answered ticks are not fired twice. A holding it never started is
 * released with null: its next owner asks the holder before.
 */
export function releaseSchedule(
  table: ScheduleTable,
  ledger: TickLedger,
  key: string,
  heldSince: bigint,
  now: number,
  inFlight: boolean
): Stopping | undefined {
  const firedThrough = table.firedThrough(key)
  if (firedThrough === undefined) {
    ledger.release(key, null, heldSince, now + RELEASE_HOLD_MS)
    return undefined
  }
  table.delete(key)
  const stopping: Stopping = { heldSince, firedThrough, until: now + RELEASE_DRAIN_MS }
  if (inFlight) return stopping
  finishRelease(ledger, key, stopping, now)
  return undefined
}

/** Names the release of a schedule that was stopping: below the ticks still open (they are fired again). */
export function finishRelease(ledger: TickLedger, key: string, stopping: Stopping, now: number): void {
  ledger.release(key, ledger.watermarkOf(key, stopping.firedThrough), stopping.heldSince, now + RELEASE_HOLD_MS)
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
