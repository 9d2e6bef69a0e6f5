import { performance } from 'node:perf_hooks'
import type { MemberUpdate } from '../store/index.ts'
import { RemoteClock } from '../util/index.ts'
import { RELEASE_HOLD_MS, parseTime, readReleases, readWatermark } from './watermark.ts'
import type { ReadWatermark } from './watermark.ts'

/**
 * A heartbeat that does not name a schedule says it still runs it only if appended this long after the
 * schedule left (the broker's clock against the scheduler leader's): the release hold, less room for skew.
 * Later, a release might have expired; the next owner then goes lower (more ticks fired twice, none lost).
 */
const RELEASE_TRUST_MS = RELEASE_HOLD_MS - 60_000

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

/**
 * Ticks a live former holder still delivers (its release names them owed): the new owner watches its heartbeats
 * (`WatermarkBook.owedNow`) and fires those it gives up or does not live to answer.
 */
export interface OwedTicks {
  readonly dispatcher: string
  readonly incarnation: number
  /** The holding whose release owes them. */
  readonly heldSince: bigint
  readonly ticks: readonly number[]
}

/** What became of watched owed ticks: answered by their holder, or to be fired here (given up, or it stopped). */
export interface OwedNow {
  readonly answered: readonly number[]
  readonly fire: readonly number[]
}

/** Where a schedule that comes to a dispatcher starts. */
export type Resolution =
  /** Every tick at or before `at` was handled by whoever had it before, but for `owed`, still in flight there. */
  | { readonly kind: 'since'; readonly at: number; readonly owed?: OwedTicks }
  /** A live dispatcher may still fire it: start when its heartbeat says it stopped. */
  | { readonly kind: 'wait'; readonly on: string }
  /** Nobody ever fired it, as far as the heartbeats tell. */
  | { readonly kind: 'unknown' }

/** This process, resolving: its own release of the schedule, if it holds one. */
export interface ResolvingSelf {
  readonly id: string
  readonly incarnation: number
  /** Its own releases of the schedule (TickLedger.releasesOf). */
  readonly releases?: ReadonlyArray<{
    readonly at: number | null
    readonly heldSince: bigint
    readonly owed: readonly number[]
    readonly orphaned: readonly number[]
  }>
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
const NOTHING_YET: OwedNow = Object.freeze({ answered: [], fire: [] })

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
    const since = (at: number) => ({ kind: 'since' as const, at: Math.min(at, bound) })
    for (const entry of this.#entries.get(holder.dispatcher) ?? []) {
      if (entry.id === self.id && entry.incarnation === self.incarnation) {
        // Its own releases speak for the holdings they ended, not for the schedule it holds now.
        // Ticks it still owes that holding are in flight here, not given to it again: from below them.
        const own = self.releases?.find(r => r.heldSince === holder.offset)
        if (own?.at != null && holder.leftAtMs !== Number.POSITIVE_INFINITY) {
          return since(Math.min(own.at, ...own.owed.map(at => at - 1), ...own.orphaned.map(at => at - 1)))
        }
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
        if (mine.at === undefined) continue
        // What it gave up is fired here; what it still delivers, only if it stops first.
        const owedBelow = this.#stopped(entry, now) ? mine.owed : []
        const start = Math.min(mine.at, ...[...mine.orphaned, ...owedBelow].map(at => at - 1))
        const resolved = since(start)
        const ticks = this.#stopped(entry, now) ? [] : mine.owed.filter(at => at <= resolved.at)
        if (ticks.length === 0) return resolved
        const owed = { dispatcher: entry.id, incarnation: entry.incarnation, heldSince: holder.offset, ticks }
        return { ...resolved, owed }
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

  /**
   * What became of owed ticks watched since a start (Resolution's `owed`): those its holder's newest heartbeat no
   * longer names were answered; those it names orphaned, or names at all once it stopped, are to be fired. A
   * holder whose heartbeats no longer name the release (cut short, or gone) is taken as having stopped.
   */
  owedNow(key: string, owed: OwedTicks): OwedNow {
    const entry = this.#entries.get(owed.dispatcher)?.find(e => e.incarnation === owed.incarnation)
    const watermark = entry?.watermark
    if (entry === undefined || watermark === undefined) return { answered: [], fire: owed.ticks }
    const release = readReleases(watermark.released[key]).find(r => r.heldSince === owed.heldSince)
    const stopped = this.#stopped(entry, this.brokerNow())
    if (release === undefined) return watermark.partial && !stopped ? NOTHING_YET : { answered: [], fire: owed.ticks }
    const answered: number[] = []
    const fire: number[] = []
    for (const at of owed.ticks) {
      if (release.orphaned.includes(at) || (stopped && release.owed.includes(at))) fire.push(at)
      else if (!release.owed.includes(at)) answered.push(at)
    }
    return { answered, fire }
  }

  #stopped(entry: BookEntry, now: number | undefined): boolean {
    if (entry.left || entry !== this.#entries.get(entry.id)?.[0]) return true
    // A dispatcher silent for two fifths of the liveness timeout (four heartbeats, or two that each waited out their
    // deadline) is taken at its newest one: it may fire a little more (twice).
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
