import type { CronExpression } from 'cron-parser'
import { parseSchedule } from '../api/index.ts'

const NO_TICKS: { readonly ticks: number[]; readonly truncated: boolean } = Object.freeze({
  ticks: Object.freeze([]) as unknown as number[],
  truncated: false
})

/**
 * The ticks of one cron schedule in one time zone, as epoch milliseconds. Wraps a cron-parser expression
 * (5 fields, 6 with seconds first, or a macro; daylight-saving behaviour is cron-parser's, see
 * docs/ping-source.md) and remembers its last answer: schedules that share an expression share one CronTicks,
 * so 100,000 sources firing `* * * * *` cost one next-tick computation per minute, not 100,000.
 */
export class CronTicks {
  readonly schedule: string
  readonly timezone: string
  readonly #expression: CronExpression
  // The last two answers: a wake asks two questions per due schedule (anything missed after its tick? the next
  // tick after now?), the same two for every schedule that shares this expression.
  #lastAfter = Number.NaN
  #lastNext = Number.NaN
  #olderAfter = Number.NaN
  #olderNext = Number.NaN

  constructor(schedule: string, timezone: string | undefined) {
    this.schedule = schedule
    this.timezone = timezone ?? 'UTC'
    this.#expression = parseSchedule(schedule, timezone, new Date(0))
  }

  /** The first tick strictly after `ms`. */
  nextAfter(ms: number): number {
    if (ms === this.#lastAfter) return this.#lastNext
    if (ms === this.#olderAfter) return this.#olderNext
    this.#expression.reset(new Date(ms))
    const next = this.#expression.next().getTime()
    this.#olderAfter = this.#lastAfter
    this.#olderNext = this.#lastNext
    this.#lastAfter = ms
    this.#lastNext = next
    return next
  }

  /**
   * The ticks in (after, through], oldest first: at most the newest `limit` of them, and whether the limit
   * left older ones out. Ticks are what `nextAfter` walks to (cron-parser's backward walk disagrees with its
   * forward one around a daylight-saving gap); a long gap is found from its end, so it costs about `limit`
   * steps, not its length.
   */
  ticksIn(after: number, through: number, limit: number): { readonly ticks: number[]; readonly truncated: boolean } {
    if (through <= after || limit < 1) return NO_TICKS
    // The common case at every wake: nothing missed. nextAfter remembers its last answer, so the schedules that
    // share this expression and were due at the same tick cost one computation, not one each.
    if (this.nextAfter(after) > through) return NO_TICKS
    const first = this.#forward(after, through, limit + 1)
    if (first.length <= limit) return { ticks: first, truncated: false }
    // More than `limit`: step back `limit` ticks from the end, then walk forward from a little before.
    this.#expression.reset(new Date(through + 1))
    let start = through
    for (let i = 0; i < limit; i++) start = this.#expression.prev().getTime()
    const tail = this.#forward(Math.max(after, start - 1), through, Number.POSITIVE_INFINITY, limit)
    return { ticks: tail, truncated: true }
  }

  // Ticks in (after, through] walking forwards: at most `max`, keeping only the newest `keep`.
  #forward(after: number, through: number, max: number, keep: number = max): number[] {
    const ticks: number[] = []
    this.#expression.reset(new Date(after))
    for (let n = 0; n < max; n++) {
      const tick = this.#expression.next().getTime()
      if (tick > through) break
      ticks.push(tick)
      if (ticks.length > keep) ticks.shift()
    }
    return ticks
  }
}

/** One CronTicks per distinct (schedule, timezone), counted by users, dropped when the last one goes. */
export class CronTicksCache {
  readonly #entries = new Map<string, { ticks: CronTicks; users: number }>()

  acquire(schedule: string, timezone: string | undefined): CronTicks {
    const key = `${timezone ?? 'UTC'} ${schedule.trim()}`
    const entry = this.#entries.get(key)
    if (entry) {
      entry.users++
      return entry.ticks
    }
    const ticks = new CronTicks(schedule, timezone)
    this.#entries.set(key, { ticks, users: 1 })
    return ticks
  }

  release(ticks: CronTicks): void {
    const key = `${ticks.timezone} ${ticks.schedule.trim()}`
    const entry = this.#entries.get(key)
    if (!entry || entry.ticks !== ticks) return
    if (--entry.users === 0) this.#entries.delete(key)
  }

  get size(): number {
    return this.#entries.size
  }
}
