import { performance } from 'node:perf_hooks'
import type { MemberUpdate } from '../store/index.ts'
import { RemoteClock } from '../util/index.ts'

/**
 * A dispatcher's schedule watermark as its heartbeat carries it (`MemberRecord.watermark`), true of its contract
 * as read through `contractOffset`: every tick at or before `through` of every schedule it runs has been handled
 * (delivered, dead-lettered or dropped, or skipped by the late policy), except the schedules in `exceptions`,
 * handled only through their own time. A schedule it gave up is in `released` (for RELEASE_HOLD_MS), one it was
 * given and has not started in `pending`; a schedule in none of them runs here — if this dispatcher has it at
 * all, which only its contract says. Times are RFC 3339 UTC with milliseconds.
 */
export interface ScheduleWatermark {
  /** Absent before it first fired. */
  readonly through?: string
  readonly exceptions?: Readonly<Record<string, string>>
  /** Schedules it gave up: per schedule its latest releases, newest first, one per holding (see Release). */
  readonly released?: Readonly<Record<string, readonly Release[]>>
  /** Schedules in its contract not started yet: it waits for their previous owner. */
  readonly pending?: readonly string[]
  /** The offset of its contracts partition applied: every contract record up to it is reflected here. */
  readonly contractOffset: string
  /**
   * Set when `released` or `pending` were cut short (more than MAX_NAMED each): a schedule not named
   * may then be one of them, so this heartbeat does not say that a schedule it does not name runs here.
   */
  readonly partial?: true
}

/**
 * A schedule a dispatcher gave up: the holding that ended (`heldSince`, the contract offset that had given it the
 * schedule) and how far that holding handled it (`through`; null for a holding it never started).
 */
export interface Release {
  readonly through: string | null
  readonly heldSince: string
}

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
 * A heartbeat that does not name a schedule says it still runs it only if appended this long after the
 * schedule left (the broker's clock against the scheduler leader's): the release hold, less room for skew.
 * Later, a release might have expired; the next owner then goes lower (more ticks fired twice, none lost).
 */
const RELEASE_TRUST_MS = RELEASE_HOLD_MS - 60_000

/**
 * `through` and the exceptions of a dispatcher's watermark: one exception per schedule handled less far. With
 * more than `maxExceptions`, the lowest are kept and `through` drops to the lowest one left out — a new owner
 * then resends a little more (same ids), never less.
 */
export function compactWatermark(
  through: number,
  exceptions: ReadonlyMap<string, number>,
  maxExceptions: number = DEFAULT_MAX_EXCEPTIONS
): { readonly through?: string; readonly exceptions?: Readonly<Record<string, string>> } {
  if (!Number.isFinite(through)) return {}
  const below = [...exceptions].filter(([, at]) => at < through).sort((a, b) => a[1] - b[1])
  let reported = through
  if (below.length > maxExceptions) {
    reported = (below[maxExceptions] as [string, number])[1]
    below.length = maxExceptions
  }
  const kept = below.filter(([, at]) => at < reported)
  return {
    through: iso(reported),
    ...(kept.length === 0 ? {} : { exceptions: Object.fromEntries(kept.map(([key, at]) => [key, iso(at)])) })
  }
}

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

function iso(ms: number): string {
  return new Date(ms).toISOString()
}

/**
 * The ticks of this dispatcher's schedules that are out but not yet handled (in flight, retrying, or aborted
 * by fencing), and the final watermarks of schedules it gave up, held for a while so their next owner can
 * read them from its heartbeats.
 */
/** Releases of one schedule a heartbeat names at most (a schedule that bounced between dispatchers). */
const RELEASES_PER_SCHEDULE = 3

/** A release as this dispatcher holds it. */
export interface HeldRelease {
  readonly at: number | null
  readonly heldSince: bigint
  readonly until: number
}

export class TickLedger {
  // Usually one tick open per schedule: a number; an array only while a schedule has several out.
  readonly #open = new Map<string, number | number[]>()
  // Per schedule, its latest releases, newest first, one per holding.
  readonly #released = new Map<string, HeldRelease[]>()
  // Bumped by forget(): a delivery begun before must not end a tick begun again since.
  readonly #generations = new Map<string, number>()

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

  /** How far `key` is handled, given how far its ticks were handed out. */
  watermarkOf(key: string, through: number): number {
    const oldest = this.oldestOpen(key)
    return oldest === undefined ? through : Math.min(through, oldest - 1)
  }

  /** Forgets the open ticks of `key` (they will be fired again, or were given up with the schedule). */
  forget(key: string): void {
    this.#open.delete(key)
    this.#generations.set(key, this.generation(key) + 1)
  }

  /** How many times `key`'s open ticks were forgotten: end a tick only in the generation that began it. */
  generation(key: string): number {
    return this.#generations.get(key) ?? 0
  }

  /**
   * The holding of `key` given at `heldSince` ended here, handled through `at` (null: never started); say so in
   * heartbeats until `until`, beside the releases of its earlier holdings (at most RELEASES_PER_SCHEDULE).
   */
  release(key: string, at: number | null, heldSince: bigint, until: number): void {
    const kept = (this.#released.get(key) ?? []).filter(r => r.heldSince !== heldSince)
    this.#released.set(key, [{ at, heldSince, until }, ...kept].slice(0, RELEASES_PER_SCHEDULE))
  }

  /** The releases of `key` this dispatcher still names, newest first. */
  releasesOf(key: string): readonly HeldRelease[] {
    return this.#released.get(key) ?? []
  }

  get openKeys(): number {
    return this.#open.size
  }

  /** The exceptions of a heartbeat: how far each schedule with ticks out is handled. */
  exceptions(through: number): Map<string, number> {
    const out = new Map<string, number>()
    for (const key of this.#open.keys()) out.set(key, this.watermarkOf(key, through))
    return out
  }

  /** The releases a heartbeat at local time `now` names (expired ones go), the newest `max` at most. */
  releases(now: number, max: number = MAX_NAMED): { named: Record<string, Release[]>; cut: boolean } {
    const live: Array<[string, HeldRelease[]]> = []
    for (const [key, list] of this.#released) {
      const kept = list.filter(r => r.until > now)
      if (kept.length === 0) this.#released.delete(key)
      else {
        if (kept.length < list.length) this.#released.set(key, kept)
        live.push([key, kept])
      }
    }
    if (live.length > max)
      live.sort((a, b) => (b[1][0] as HeldRelease).until - (a[1][0] as HeldRelease).until).length = max
    const named: Record<string, Release[]> = {}
    for (const [key, list] of live) {
      named[key] = list.map(({ at, heldSince }) => ({
        through: at === null ? null : iso(at),
        heldSince: String(heldSince)
      }))
    }
    return { named, cut: live.length < this.#released.size }
  }
}

/**
 * A dispatcher that had a schedule, as the schedule's contract names it (`ContractRecord.movedFrom`), or this
 * dispatcher itself before a restart.
 */
export interface Holder {
  readonly dispatcher: string
  /** The offset of its contracts partition that gave it the schedule: its heartbeats before it speak of none. */
  readonly offset: bigint
  /**
   * Its incarnation when the schedule left it, as the scheduler leader saw: incarnations up to it had the
   * schedule from `offset` on; a later one may never have had it. Infinity: the schedule has not left it.
   */
  readonly incarnation: number
  /** When the schedule left it, on the scheduler leader's clock; Infinity: it has not left. */
  readonly leftAtMs: number
}

/** Where a schedule that comes to a dispatcher starts. */
export type Resolution =
  /** Every tick at or before `at` was handled by whoever had it before. */
  | { readonly kind: 'since'; readonly at: number }
  /** A live dispatcher may still fire it: start when its heartbeat says it stopped. */
  | { readonly kind: 'wait'; readonly on: string }
  /** Nobody ever fired it, as far as the heartbeats tell. */
  | { readonly kind: 'unknown' }

/** This process, resolving: its own release of the schedule, if it holds one. */
export interface ResolvingSelf {
  readonly id: string
  readonly incarnation: number
  /** Its own releases of the schedule (TickLedger.releasesOf). */
  readonly releases?: ReadonlyArray<{ readonly at: number | null; readonly heldSince: bigint }>
}

interface BookEntry {
  readonly id: string
  readonly incarnation: number
  lastSeen: number
  left: boolean
  watermark: ReadWatermark | undefined
  /** Broker append time of the heartbeat that carried `watermark`. */
  watermarkAt: number
}

export interface WatermarkBookOptions {
  readonly livenessTimeoutMs: number
  /** Stopped incarnations older than this (behind the newest heartbeat) are forgotten. Default 1 hour. */
  readonly retentionMs?: number
  readonly clock?: () => number
}

const UNKNOWN: Resolution = Object.freeze({ kind: 'unknown' })

/**
 * What a new owner needs to know of a schedule's past: every dispatcher incarnation's newest watermark, kept
 * after it left (a tombstone does not erase it here) or died. `resolve` asks the schedule's holders newest
 * first. A heartbeat speaks for a schedule only once it reflects the contract that gave the schedule (its
 * `contractOffset`): then the schedule is released (exact: the holder stopped there), pending (never started),
 * or running (handled through its exception or `through`). A holder still alive that runs it or may start it is
 * waited for: the old owner stops before the new one starts. Liveness is judged on the broker's clock.
 */
export class WatermarkBook {
  // Per dispatcher id, its incarnations newest first.
  readonly #entries = new Map<string, BookEntry[]>()
  readonly #livenessTimeoutMs: number
  readonly #retentionMs: number
  readonly #broker: RemoteClock
  #applied = 0

  constructor(options: WatermarkBookOptions) {
    this.#livenessTimeoutMs = options.livenessTimeoutMs
    this.#retentionMs = options.retentionMs ?? 3_600_000
    this.#broker = new RemoteClock(options.clock ?? (() => performance.now()))
  }

  /** Incarnations known. */
  get size(): number {
    let size = 0
    for (const list of this.#entries.values()) size += list.length
    return size
  }

  apply(update: MemberUpdate): void {
    this.#broker.observe(update.appendTimeMs)
    const list = this.#entries.get(update.id)
    if (update.value === 'tombstone') {
      const entry =
        update.tombstoneIncarnation === undefined
          ? list?.[0]
          : list?.find(e => e.incarnation === update.tombstoneIncarnation)
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
    let entry = list?.find(e => e.incarnation === incarnation)
    if (!entry) {
      entry = {
        id: update.id,
        incarnation,
        lastSeen: update.appendTimeMs,
        left: false,
        watermark: undefined,
        watermarkAt: Number.NEGATIVE_INFINITY
      }
      const next = [...(list ?? []), entry].sort((a, b) => b.incarnation - a.incarnation)
      this.#entries.set(update.id, next)
    }
    entry.lastSeen = Math.max(entry.lastSeen, update.appendTimeMs)
    const watermark = readWatermark(value.watermark)
    if (watermark && update.appendTimeMs >= entry.watermarkAt) {
      entry.watermark = watermark
      entry.watermarkAt = update.appendTimeMs
    }
    if (++this.#applied % 1_000 === 0) this.#prune()
  }

  /** Now on the broker's clock, as far as this book can tell. */
  brokerNow(): number | undefined {
    return this.#broker.now()
  }

  /**
   * Where `key` starts on `self`, given the dispatchers that held it, newest first. With `giveUp`, nobody is
   * waited for any more: a live holder counts as if it had stopped at its newest heartbeat (lower, so safe: the
   * ticks it fires after that are fired twice, same ids).
   */
  resolve(key: string, holders: readonly Holder[], self: ResolvingSelf, giveUp = false): Resolution {
    const now = this.brokerNow()
    for (const holder of holders) {
      const found = this.#fromHolder(key, holder, self, giveUp, now)
      if (found !== undefined) return found
    }
    return UNKNOWN
  }

  // What `holder` says of `key`; undefined when it says nothing (ask the one before it).
  #fromHolder(
    key: string,
    holder: Holder,
    self: ResolvingSelf,
    giveUp: boolean,
    now: number | undefined
  ): Resolution | undefined {
    // The lowest handled point of later incarnations that may never have had it: a bound on the earlier ones.
    let bound = Number.POSITIVE_INFINITY
    const since = (at: number): Resolution => ({ kind: 'since', at: Math.min(at, bound) })
    for (const entry of this.#entries.get(holder.dispatcher) ?? []) {
      if (entry.id === self.id && entry.incarnation === self.incarnation) {
        // Its own releases speak for the holdings they ended, not for the schedule it holds now.
        const own = self.releases?.find(r => r.heldSince === holder.offset)
        if (own?.at != null && holder.leftAtMs !== Number.POSITIVE_INFINITY) return since(own.at)
        continue
      }
      const alive = !giveUp && !this.#stopped(entry, now)
      const watermark = entry.watermark
      if (watermark === undefined || watermark.contractOffset < holder.offset) {
        // It had not applied the contract that gave it the schedule: it may be about to start it.
        if (alive) return { kind: 'wait', on: entry.id }
        continue
      }
      const releases = readReleases(watermark.released[key])
      // The release of this holding is exact (or says it never began); a later holding's says this one is over
      // (where, its own release will say); an earlier holding's says nothing of this one.
      const mine = releases.find(r => r.heldSince === holder.offset)
      if (mine !== undefined) {
        if (mine.at !== undefined) return since(mine.at)
        continue
      }
      if (releases.some(r => r.heldSince > holder.offset)) {
        // Its release may still come (the holding is stopping, ticks in flight): wait while it lives.
        if (alive) return { kind: 'wait', on: entry.id }
        continue
      }
      // Not named and the heartbeat names all it gave up lately: it runs the schedule — if this incarnation
      // ever had it, which a later one may not have.
      const unstarted = watermark.pending.has(key) || watermark.partial
      const trusted = entry.watermarkAt < holder.leftAtMs + RELEASE_TRUST_MS
      if (alive && (unstarted || trusted)) return { kind: 'wait', on: entry.id }
      if (unstarted || !trusted) continue
      const at = parseTime(watermark.exceptions[key]) ?? watermark.through
      if (at === undefined) continue
      if (entry.incarnation <= holder.incarnation) return since(at)
      bound = Math.min(bound, at)
    }
    return undefined
  }

  #stopped(entry: BookEntry, now: number | undefined): boolean {
    if (entry.left || entry !== this.#entries.get(entry.id)?.[0]) return true
    // A dispatcher that missed two heartbeats is taken at its newest one: it may fire a little more (twice).
    return now !== undefined && now - entry.lastSeen > (2 * this.#livenessTimeoutMs) / 5
  }

  #prune(): void {
    const horizon = (this.#broker.newest() ?? 0) - this.#retentionMs
    for (const [id, list] of this.#entries) {
      const kept = list.filter((entry, i) => {
        const stopped = entry.left || i > 0
        return !(entry.lastSeen < horizon && (stopped || entry.lastSeen < horizon - this.#retentionMs))
      })
      if (kept.length === 0) this.#entries.delete(id)
      else if (kept.length < list.length) this.#entries.set(id, kept)
    }
  }
}

// A malformed release is read as one of a holding later than any: the holder says nothing then (go lower).
const UNREADABLE = [{ at: undefined, heldSince: BigInt(Number.MAX_SAFE_INTEGER) * 1000n }]

function readReleases(value: unknown): Array<{ at: number | undefined; heldSince: bigint }> {
  if (value === undefined) return []
  if (!Array.isArray(value)) return UNREADABLE
  const out: Array<{ at: number | undefined; heldSince: bigint }> = []
  for (const r of value) {
    if (!isRecord(r) || typeof r['heldSince'] !== 'string' || !/^\d+$/.test(r['heldSince'])) return UNREADABLE
    const through = r['through']
    out.push({ at: typeof through === 'string' ? parseTime(through) : undefined, heldSince: BigInt(r['heldSince']) })
  }
  return out
}

function parseTime(value: string | null | undefined): number | undefined {
  if (value === undefined || value === null) return undefined
  const at = Date.parse(value)
  return Number.isFinite(at) ? at : undefined
}
