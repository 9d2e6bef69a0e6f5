// The schedule watermark a dispatcher's heartbeat carries: its wire shape, how it is made compact, and how it is
// read back. What a dispatcher tracks to write it is in tick-ledger.ts; what a new owner makes of it, in
// watermark-book.ts. The wire shape itself (ScheduleWatermark, Release) is a record of the members topic, in
// src/store/records.ts.
import type { Release } from '../store/index.ts'

/** Exceptions a heartbeat carries at most; beyond them `through` is lowered, so the record stays small. */
export const DEFAULT_MAX_EXCEPTIONS = 2_000
/**
 * Releases, and schedules pending, a heartbeat names at most (each): a drain of a dispatcher with 3,000 schedules
 * names them all, and the record stays under 1 MiB (about 105 bytes a release, 40 a pending schedule, 60 an
 * exception: 0.7 MB at every cap).
 */
export const MAX_NAMED = 4_000

/** How long a dispatcher that gave a schedule up names its final watermark in its heartbeats, for its next owner. */
export const RELEASE_HOLD_MS = 300_000

/**
 * `through` and the exceptions of a dispatcher's watermark: one exception per schedule handled less far. With
 * more than `maxExceptions`, the lowest are kept and `through` drops to the lowest one left out — a new owner
 * then resends a little more (same ids), never less. Schedules `waiting` on their sink (each with its first tick
 * held open, maybe for days) are left out first, and never lower `through`, which would refire every other
 * schedule's ticks from there: they are returned as `held`, for the heartbeat to name as not started (their next
 * owner then asks the holder before, and fires more, never less).
 */
export function compactWatermark(
  through: number,
  exceptions: ReadonlyMap<string, number>,
  maxExceptions: number = DEFAULT_MAX_EXCEPTIONS,
  waiting: ReadonlySet<string> = NO_KEYS
): { readonly through?: string; readonly exceptions?: Readonly<Record<string, string>>; readonly held?: string[] } {
  if (!Number.isFinite(through)) return {}
  // The waiting last: those left out are the waiting ones first, and then `through` need not drop at all.
  const below = [...exceptions]
    .filter(([, at]) => at < through)
    .sort((a, b) => Number(waiting.has(a[0])) - Number(waiting.has(b[0])) || a[1] - b[1])
  let reported = through
  const held: string[] = []
  if (below.length > maxExceptions) {
    for (const [key, at] of below.slice(maxExceptions)) {
      if (waiting.has(key)) held.push(key)
      else if (at < reported) reported = at
    }
    below.length = maxExceptions
  }
  const kept = below.filter(([, at]) => at < reported)
  return {
    through: iso(reported),
    ...(kept.length === 0 ? {} : { exceptions: Object.fromEntries(kept.map(([key, at]) => [key, iso(at)])) }),
    ...(held.length === 0 ? {} : { held })
  }
}

const NO_KEYS: ReadonlySet<string> = new Set()

/** A watermark as read from a heartbeat. */
export interface ReadWatermark {
  readonly through: number | undefined
  readonly exceptions: Readonly<Record<string, string>>
  readonly released: Readonly<Record<string, readonly Release[]>>
  readonly pending: ReadonlySet<string>
  /** -1 for a heartbeat that does not say (it then speaks for no schedule). */
  readonly contractOffset: bigint
  readonly partial: boolean
}

const NO_PENDING: ReadonlySet<string> = new Set()

/** A watermark read from a heartbeat, or undefined when the field is absent or malformed. */
export function readWatermark(value: unknown): ReadWatermark | undefined {
  if (!isRecord(value)) return undefined
  const { through, exceptions, released, pending, contractOffset, partial } = value
  let at: number | undefined
  if (through !== undefined) {
    at = typeof through === 'string' ? Date.parse(through) : Number.NaN
    if (!Number.isFinite(at)) return undefined
  }
  if (exceptions !== undefined && !isRecord(exceptions)) return undefined
  if (released !== undefined && !isRecord(released)) return undefined
  if (pending !== undefined && !(Array.isArray(pending) && pending.every(key => typeof key === 'string'))) {
    return undefined
  }
  let offset = -1n
  if (contractOffset !== undefined) {
    if (typeof contractOffset !== 'string' || !/^-?\d+$/.test(contractOffset)) return undefined
    offset = BigInt(contractOffset)
  }
  return {
    through: at,
    exceptions: (exceptions ?? {}) as Record<string, string>,
    released: (released ?? {}) as Record<string, Release[]>,
    pending: pending === undefined || pending.length === 0 ? NO_PENDING : new Set(pending),
    contractOffset: offset,
    partial: partial === true
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

export function iso(ms: number): string {
  return new Date(ms).toISOString()
}

/** A release as read from a heartbeat (see Release): times in ms; `at` undefined for a holding never started. */
export interface ReadRelease {
  readonly at: number | undefined
  readonly heldSince: bigint
  readonly owed: readonly number[]
  readonly orphaned: readonly number[]
}

const NO_TICKS: readonly number[] = Object.freeze([])

// A malformed release is read as one of a holding later than any: the holder says nothing then (go lower).
const UNREADABLE: ReadRelease[] = [
  { at: undefined, heldSince: BigInt(Number.MAX_SAFE_INTEGER) * 1000n, owed: NO_TICKS, orphaned: NO_TICKS }
]

export function readReleases(value: unknown): ReadRelease[] {
  if (value === undefined) return []
  if (!Array.isArray(value)) return UNREADABLE
  const out: ReadRelease[] = []
  for (const r of value) {
    if (!isRecord(r) || typeof r['heldSince'] !== 'string' || !/^\d+$/.test(r['heldSince'])) return UNREADABLE
    const owed = readTicks(r['owed'])
    const orphaned = readTicks(r['orphaned'])
    if (owed === undefined || orphaned === undefined) return UNREADABLE
    const through = r['through']
    out.push({
      at: typeof through === 'string' ? parseTime(through) : undefined,
      heldSince: BigInt(r['heldSince']),
      owed,
      orphaned
    })
  }
  return out
}

// A list of tick times; undefined when malformed.
function readTicks(value: unknown): readonly number[] | undefined {
  if (value === undefined) return NO_TICKS
  if (!Array.isArray(value)) return undefined
  const out: number[] = []
  for (const v of value) {
    const at = typeof v === 'string' ? parseTime(v) : undefined
    if (at === undefined) return undefined
    out.push(at)
  }
  return out
}

export function parseTime(value: string | null | undefined): number | undefined {
  if (value === undefined || value === null) return undefined
  const at = Date.parse(value)
  return Number.isFinite(at) ? at : undefined
}
