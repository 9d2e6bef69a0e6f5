import { performance } from 'node:perf_hooks'

/**
 * A dispatcher's schedule watermark as its heartbeat carries it (`MemberRecord.watermark`): every tick at or
 * before `through` of every schedule it runs has been handled (delivered, dead-lettered or dropped, or skipped
 * by the late policy), except the schedules in `exceptions`, handled only through their own time. Times are
 * RFC 3339 UTC with milliseconds.
 */
export interface ScheduleWatermark {
  readonly through: string
  readonly exceptions?: Readonly<Record<string, string>>
}

/** Exceptions a heartbeat carries at most; beyond them `through` is lowered, so the record stays small. */
export const DEFAULT_MAX_EXCEPTIONS = 2_000

/** How long a dispatcher that gave a schedule up keeps its final watermark in its heartbeats, for its next owner. */
export const RELEASE_HOLD_MS = 60_000
/**
 * A live dispatcher a schedule moved from speaks for it through its `through` in heartbeats appended up to this
 * long after the move (on the broker's clock, the move on the scheduler leader's): the hold, less room for skew.
 */
const MOVER_TRUST_MS = RELEASE_HOLD_MS - 10_000

/**
 * The compact watermark of a dispatcher: `through`, plus one exception per schedule handled less far. With
 * more than `maxExceptions`, the lowest are kept and `through` drops to the lowest one left out — a new owner
 * then resends a little more (same ids), never less.
 */
export function compactWatermark(
  through: number,
  exceptions: ReadonlyMap<string, number>,
  maxExceptions: number = DEFAULT_MAX_EXCEPTIONS
): ScheduleWatermark {
  const below = [...exceptions].filter(([, at]) => at < through).sort((a, b) => a[1] - b[1])
  let reported = through
  if (below.length > maxExceptions) {
    reported = (below[maxExceptions] as [string, number])[1]
    below.length = maxExceptions
  }
  const kept = below.filter(([, at]) => at < reported)
  return {
    through: new Date(reported).toISOString(),
    ...(kept.length === 0 ? {} : { exceptions: Object.fromEntries(kept.map(([key, at]) => [key, iso(at)])) })
  }
}

/** A watermark read from a heartbeat, or undefined when the field is absent or malformed. */
export function readWatermark(
  value: unknown
): { through: number; exceptions: Readonly<Record<string, string>> } | undefined {
  if (typeof value !== 'object' || value === null) return undefined
  const { through, exceptions } = value as { through?: unknown; exceptions?: unknown }
  const at = typeof through === 'string' ? Date.parse(through) : Number.NaN
  if (!Number.isFinite(at)) return undefined
  if (exceptions === undefined) return { through: at, exceptions: {} }
  if (typeof exceptions !== 'object' || exceptions === null || Array.isArray(exceptions)) return undefined
  return { through: at, exceptions: exceptions as Record<string, string> }
}

function iso(ms: number): string {
  return new Date(ms).toISOString()
}

/**
 * The ticks of this dispatcher's schedules that are out but not yet handled (in flight, retrying, or aborted
 * by fencing), and the final watermarks of schedules it gave up, held for a while so their next owner can
 * read them from its heartbeats.
 */
export class TickLedger {
  // Usually one tick open per schedule: a number; an array only while a schedule has several out.
  readonly #open = new Map<string, number | number[]>()
  readonly #released = new Map<string, { at: number; until: number }>()

  /** A tick went out. */
  begin(key: string, at: number): void {
    const open = this.#open.get(key)
    if (open === undefined) this.#open.set(key, at)
    else if (typeof open === 'number') this.#open.set(key, [open, at])
    else open.push(at)
  }

  /** A tick was handled (delivered, dead-lettered or dropped). */
  end(key: string, at: number): void {
    const open = this.#open.get(key)
    if (open === undefined) return
    if (typeof open === 'number') {
      if (open === at) this.#open.delete(key)
      return
    }
    const i = open.indexOf(at)
    if (i >= 0) open.splice(i, 1)
    if (open.length === 1) this.#open.set(key, open[0] as number)
    else if (open.length === 0) this.#open.delete(key)
  }

  /** The oldest tick of `key` out and not handled. */
  oldestOpen(key: string): number | undefined {
    const open = this.#open.get(key)
    if (open === undefined || typeof open === 'number') return open
    let oldest = Number.POSITIVE_INFINITY
    for (const at of open) if (at < oldest) oldest = at
    return oldest
  }

  /** How far `key` is handled, given the table's `through`. */
  watermarkOf(key: string, through: number): number {
    const oldest = this.oldestOpen(key)
    return oldest === undefined ? through : Math.min(through, oldest - 1)
  }

  /** Forgets the open ticks of `key` (they will be fired again, or were given up with the schedule). */
  forget(key: string): void {
    this.#open.delete(key)
  }

  /** `key` left this dispatcher handled through `at`; say so in heartbeats until `until`. */
  release(key: string, at: number, until: number): void {
    this.#released.set(key, { at, until })
  }

  /** The final watermark of a schedule this dispatcher gave up and still holds, taking it back. */
  reclaim(key: string): number | undefined {
    const released = this.#released.get(key)
    this.#released.delete(key)
    return released?.at
  }

  get openKeys(): number {
    return this.#open.size
  }

  /** The exceptions of a heartbeat at local time `now`: open schedules and held releases (expired ones go). */
  exceptions(through: number, now: number, extra?: ReadonlyMap<string, number>): Map<string, number> {
    const out = new Map<string, number>()
    for (const key of this.#open.keys()) out.set(key, this.watermarkOf(key, through))
    for (const [key, released] of this.#released) {
      if (released.until <= now) this.#released.delete(key)
      else if (!out.has(key)) out.set(key, released.at)
    }
    if (extra) for (const [key, at] of extra) out.set(key, Math.min(at, out.get(key) ?? at))
    return out
  }
}

/** One heartbeat of `<prefix>.members` as the book reads it. */
export interface WatermarkUpdate {
  readonly id: string
  /** The decoded value, or `tombstone`. */
  readonly value: unknown
  /** Broker append time. */
  readonly appendTimeMs: number
  /** On a tombstone: the incarnation that left, when its header says. */
  readonly tombstoneIncarnation?: number
}

interface BookEntry {
  readonly id: string
  readonly incarnation: number
  lastSeen: number
  left: boolean
  watermark: { through: number; exceptions: Readonly<Record<string, string>> } | undefined
}

export interface WatermarkBookOptions {
  readonly livenessTimeoutMs: number
  /** Stopped incarnations older than this (behind the newest heartbeat) are forgotten. Default 1 hour. */
  readonly retentionMs?: number
  readonly clock?: () => number
}

/**
 * What a new owner needs to know of a schedule's past: every dispatcher incarnation's newest watermark, kept
 * after it left (a tombstone does not erase it here) or died. A dispatcher heartbeat does not list its
 * schedules (that would not stay small), so for a schedule that comes to it a new owner takes the lowest
 * watermark among the incarnations that stopped last — the previous owner is one of them when it died, left or
 * restarted — together with any explicit exception for it, and the watermarks of the live dispatchers its
 * contract says it moved from (a cordon, a drain, a rebalance). Lower is safe: a resend has the same id.
 * Liveness is judged on the broker's clock, as the controllers judge it.
 */
export class WatermarkBook {
  readonly #entries = new Map<string, BookEntry>()
  readonly #highest = new Map<string, number>()
  readonly #livenessTimeoutMs: number
  readonly #retentionMs: number
  readonly #clock: () => number
  #newest: { appendTimeMs: number; seenAt: number } | undefined
  #applied = 0

  constructor(options: WatermarkBookOptions) {
    this.#livenessTimeoutMs = options.livenessTimeoutMs
    this.#retentionMs = options.retentionMs ?? 3_600_000
    this.#clock = options.clock ?? (() => performance.now())
  }

  get size(): number {
    return this.#entries.size
  }

  apply(update: WatermarkUpdate): void {
    if (this.#newest === undefined || update.appendTimeMs >= this.#newest.appendTimeMs) {
      this.#newest = { appendTimeMs: update.appendTimeMs, seenAt: this.#clock() }
    }
    if (update.value === 'tombstone') {
      const incarnation = update.tombstoneIncarnation ?? this.#highest.get(update.id)
      const entry = incarnation === undefined ? undefined : this.#entries.get(entryKey(update.id, incarnation))
      if (entry) {
        entry.left = true
        entry.lastSeen = Math.max(entry.lastSeen, update.appendTimeMs)
      }
      return
    }
    const value = update.value as { id?: unknown; incarnation?: unknown; watermark?: unknown } | null
    if (typeof value !== 'object' || value === null || value.id !== update.id) return
    const incarnation = value.incarnation
    if (typeof incarnation !== 'number' || !Number.isSafeInteger(incarnation)) return
    if (incarnation > (this.#highest.get(update.id) ?? -1)) this.#highest.set(update.id, incarnation)
    const key = entryKey(update.id, incarnation)
    let entry = this.#entries.get(key)
    if (!entry) {
      entry = { id: update.id, incarnation, lastSeen: update.appendTimeMs, left: false, watermark: undefined }
      this.#entries.set(key, entry)
    }
    entry.lastSeen = Math.max(entry.lastSeen, update.appendTimeMs)
    const watermark = readWatermark(value.watermark)
    if (watermark) entry.watermark = watermark
    if (++this.#applied % 1_000 === 0) this.#prune()
  }

  /** Now on the broker's clock, as far as this book can tell. */
  brokerNow(): number | undefined {
    return this.#newest && this.#newest.appendTimeMs + (this.#clock() - this.#newest.seenAt)
  }

  /**
   * Through when `sourceKey` was handled by whoever ran it before, as far as the heartbeats say; undefined when
   * none says anything. `self` (this process) is left out: it knows its own. `movedFrom` names the dispatchers
   * the schedule was moved from and when (its contract says): a live one's exception for it counts, and so does
   * its `through` in a heartbeat from before the release hold could have run out — until it gave the schedule up
   * every tick up to `through` was handled, and for RELEASE_HOLD_MS after, its heartbeats name the exact point.
   */
  sinceFor(
    sourceKey: string,
    self: { readonly id: string; readonly incarnation: number },
    movedFrom: ReadonlyArray<{ readonly dispatcher: string; readonly atMs: number }> = []
  ): number | undefined {
    const now = this.brokerNow()
    if (now === undefined) return undefined
    // A dispatcher that missed two heartbeats is not running anything a new owner could be taking over from:
    // the scheduler moves a schedule only after a whole liveness timeout (five heartbeats) of silence.
    const staleAfter = (2 * this.#livenessTimeoutMs) / 5
    const stopped: BookEntry[] = []
    let since: number | undefined
    for (const entry of this.#entries.values()) {
      if (entry.watermark === undefined || (entry.id === self.id && entry.incarnation === self.incarnation)) continue
      const isStopped =
        entry.left || entry.incarnation < (this.#highest.get(entry.id) ?? 0) || now - entry.lastSeen > staleAfter
      if (isStopped) stopped.push(entry)
      else {
        let at = parseTime(entry.watermark.exceptions[sourceKey])
        const moved = at === undefined ? movedFrom.find(m => m.dispatcher === entry.id) : undefined
        // Its `through` speaks for the schedule only while a release of it would still be in its heartbeats:
        // a heartbeat before the release had the schedule in hand, one within the hold names it.
        if (moved !== undefined && entry.lastSeen < moved.atMs + MOVER_TRUST_MS) at = entry.watermark.through
        if (at !== undefined) since = Math.min(since ?? at, at)
      }
    }
    if (stopped.length === 0) return since
    let last = Number.NEGATIVE_INFINITY
    for (const entry of stopped) if (entry.lastSeen > last) last = entry.lastSeen
    for (const entry of stopped) {
      if (entry.lastSeen < last - 2 * this.#livenessTimeoutMs) continue
      const watermark = entry.watermark as NonNullable<BookEntry['watermark']>
      const at = parseTime(watermark.exceptions[sourceKey]) ?? watermark.through
      since = Math.min(since ?? at, at)
    }
    return since
  }

  #prune(): void {
    const horizon = (this.#newest?.appendTimeMs ?? 0) - this.#retentionMs
    for (const [key, entry] of this.#entries) {
      const stopped = entry.left || entry.incarnation < (this.#highest.get(entry.id) ?? 0)
      if (entry.lastSeen < horizon && (stopped || entry.lastSeen < horizon - this.#retentionMs)) {
        this.#entries.delete(key)
      }
    }
  }
}

function entryKey(id: string, incarnation: number): string {
  return `${id}#${incarnation}`
}

function parseTime(value: string | undefined): number | undefined {
  if (value === undefined) return undefined
  const at = Date.parse(value)
  return Number.isFinite(at) ? at : undefined
}
