// What the benchmarks' sinks count, whichever server answers: requests, events, their span, per-partition order (from
// the `ce-id` Shoal sets for a Kafka record), distinct ids and repeats, and every id with its arrival time.
import type { SinkMessage } from './kafka-source-sink.ts'

export type SinkStats = Extract<SinkMessage, { type: 'stats' }>
/** Every request's `ce-id` and arrival time (ms since the epoch), from a sink that logs ids. */
export type SinkDeliveries = Extract<SinkMessage, { type: 'deliveries' }>

export interface TallyOptions {
  readonly checkOrder?: boolean
  readonly countIds?: boolean
  readonly logIds?: boolean
}

const ID = /^partition:(\d+)\/offset:(\d+)$/

export class SinkTally {
  readonly #options: TallyOptions
  #count = 0
  #events = 0
  #first = 0
  #last = 0
  #outOfOrder = 0
  #partitions = new Map<number, { lastOffset: number; count: number; first: number; last: number }>()
  #ids = new Set<string>()
  #duplicates = 0
  #logged: { ids: string[]; at: number[] } = { ids: [], at: [] }

  constructor(options: TallyOptions) {
    this.#options = options
  }

  /** A request with `ce-id` `id` arrived at `now` (performance.now()), carrying `events` events. */
  request(id: string, now: number, events = 1): void {
    if (this.#count === 0) this.#first = now
    this.#last = now
    this.#count++
    this.#events += events
    if (this.#options.checkOrder) {
      const match = ID.exec(id)
      if (match) {
        const partition = Number(match[1])
        const offset = Number(match[2])
        let seen = this.#partitions.get(partition)
        if (seen === undefined)
          this.#partitions.set(partition, (seen = { lastOffset: -1, count: 0, first: now, last: now }))
        if (offset <= seen.lastOffset) this.#outOfOrder++
        seen.lastOffset = offset
        seen.count++
        seen.last = now
      }
    }
    if (this.#options.countIds) {
      if (this.#ids.has(id)) this.#duplicates++
      else this.#ids.add(id)
    }
    if (this.#options.logIds) {
      this.#logged.ids.push(id)
      this.#logged.at.push(performance.timeOrigin + now)
    }
  }

  reset(): void {
    this.#count = 0
    this.#events = 0
    this.#first = 0
    this.#last = 0
    this.#outOfOrder = 0
    this.#partitions = new Map()
    this.#ids = new Set()
    this.#duplicates = 0
    this.#logged = { ids: [], at: [] }
  }

  stats(now: number): SinkStats {
    const count = this.#count
    return {
      type: 'stats',
      count,
      events: this.#events,
      spanMs: count > 1 ? this.#last - this.#first : 0,
      sinceFirstMs: count > 0 ? now - this.#first : 0,
      outOfOrder: this.#outOfOrder,
      unique: this.#ids.size,
      duplicates: this.#duplicates,
      partitions: [...this.#partitions].map(([partition, p]) => ({
        partition,
        count: p.count,
        spanMs: p.last - p.first
      }))
    }
  }

  deliveries(): SinkDeliveries {
    return { type: 'deliveries', ...this.#logged }
  }
}
