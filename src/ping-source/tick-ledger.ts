import { MAX_NAMED, iso } from './watermark.ts'
import type { Release } from '../store/index.ts'

/** Releases of one schedule a heartbeat names at most (a schedule that bounced between dispatchers). */
const RELEASES_PER_SCHEDULE = 3

/** A release as this dispatcher holds it (see Release): `owed` and `orphaned` shrink as their ticks settle. */
export interface HeldRelease {
  readonly at: number | null
  readonly heldSince: bigint
  readonly until: number
  readonly owed: number[]
  readonly orphaned: number[]
}

/**
 * The ticks of this dispatcher's schedules that are out but not yet handled (in flight, retrying, or aborted
 * by fencing), and the final watermarks of schedules it gave up, held for a while so their next owner can
 * read them from its heartbeats — and for as long as ticks it still owes them are in flight.
 */
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

  /** The ticks of `key` out and not handled. */
  openOf(key: string): readonly number[] {
    const open = this.#open.get(key)
    return open === undefined ? [] : typeof open === 'number' ? [open] : open
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
   * The holding of `key` given at `heldSince` ended here, handled through `at` (null: never started) but for the
   * ticks `owed`, still in flight here; say so in heartbeats until `until` and while any of those is, beside the
   * releases of its earlier holdings (at most RELEASES_PER_SCHEDULE).
   */
  release(key: string, at: number | null, heldSince: bigint, until: number, owed: readonly number[] = []): void {
    const kept = (this.#released.get(key) ?? []).filter(r => r.heldSince !== heldSince)
    const release: HeldRelease = { at, heldSince, until, owed: [...owed], orphaned: [] }
    this.#released.set(key, [release, ...kept].slice(0, RELEASES_PER_SCHEDULE))
  }

  /**
   * A tick of `key` in flight came back: answered (`answered`), it is owed no more; aborted, a release that owes it
   * names it orphaned, for the next owner to fire. True when a release changed (worth a heartbeat).
   */
  settleOwed(key: string, at: number, answered: boolean): boolean {
    let changed = false
    for (const release of this.#released.get(key) ?? []) {
      const i = release.owed.indexOf(at)
      if (i < 0) continue
      release.owed.splice(i, 1)
      if (!answered) release.orphaned.push(at)
      changed = true
    }
    return changed
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
      const kept = list.filter(r => r.until > now || r.owed.length > 0)
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
      named[key] = list.map(({ at, heldSince, owed, orphaned }) => ({
        through: at === null ? null : iso(at),
        heldSince: String(heldSince),
        ...(owed.length === 0 ? {} : { owed: owed.map(iso) }),
        ...(orphaned.length === 0 ? {} : { orphaned: orphaned.map(iso) })
      }))
    }
    return { named, cut: live.length < this.#released.size }
  }
}
