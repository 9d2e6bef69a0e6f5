import { LogTailer } from '../kafka/index.ts'
import type { LogRecord } from '../kafka/index.ts'
import { memberUpdateOf, storeNames } from '../store/index.ts'
import type { ContractRecord } from '../store/index.ts'
import { holdersOf } from './hand-over.ts'
import { WatermarkBook } from './watermark-book.ts'
import type { OwedNow, OwedTicks } from './watermark-book.ts'
import type { HeldRelease } from './tick-ledger.ts'
import type { Log } from '../log/index.ts'

/**
 * How long a schedule that came to a dispatcher waits for a live previous owner to say it stopped (its release
 * in a heartbeat, one heartbeat interval after it read its contract) before it starts from that owner's newest
 * heartbeat anyway: then both fire for a while, same ids.
 */
export const HANDOVER_WAIT_MS = 10_000

export interface PreviousOwnersOptions {
  /** The Kafka that holds Shoal's store. */
  readonly brokers: readonly string[]
  readonly prefix?: string
  readonly dispatcherId: string
  /** This process's incarnation: its own heartbeats are not a previous owner's. */
  readonly incarnation: number
  readonly livenessTimeoutMs: number
  readonly log: Log
  /** Heartbeats were read, or a wait ran out, while schedules wait: look at them again. */
  readonly onChange: () => void
  /** Owed ticks watched (see `watch`) were answered by their holder, or are to be fired here. */
  readonly onOwed: (key: string, now: OwedNow) => void
}

/** Where a schedule that came to this dispatcher starts: after `at`, but for the ticks a live holder owes. */
export interface Start {
  readonly at: number
  readonly owed?: OwedTicks
}

/**
 * Every dispatcher's heartbeat watermark, read from the members topic, and the schedules that wait for a
 * previous owner: where a schedule that comes to this dispatcher starts, or that it must wait a little more; and
 * the ticks live previous owners still deliver for schedules started here, until they are answered or given up.
 */
export class PreviousOwners {
  readonly #options: PreviousOwnersOptions
  readonly #tailer: LogTailer
  readonly #topic: string
  readonly #book: WatermarkBook
  // Schedules of the contract whose start waits for a previous owner: since when (local clock).
  readonly #waiting = new Map<string, number>()
  readonly #watches = new Map<string, OwedTicks>()
  #timer: NodeJS.Timeout | undefined
  #recheckQueued = false
  // Set when the heartbeats just read are what calls the next look: the book is up to date without a barrier.
  #heartbeatsRead = false
  #stopped = false

  constructor(options: PreviousOwnersOptions) {
    this.#options = options
    this.#topic = storeNames(options.prefix).membersTopic
    this.#book = new WatermarkBook({ livenessTimeoutMs: options.livenessTimeoutMs })
    this.#tailer = new LogTailer({
      connection: { brokers: options.brokers, clientId: `shoal-${options.dispatcherId}-ping-members` },
      topics: [this.#topic],
      onRecord: record => this.#onMember(record),
      onError: error => options.log('warn', 'reading the members topic failed; retrying', { error: String(error) })
    })
  }

  start(): Promise<void> {
    return this.#tailer.start()
  }

  /** No more waiting: the plane is closing. */
  stopWaiting(): void {
    this.#stopped = true
    clearTimeout(this.#timer)
  }

  close(): Promise<void> {
    this.stopWaiting()
    return this.#tailer.close()
  }

  /**
   * Reads every heartbeat appended so far, unless the heartbeats just read are what calls and every one of
   * `fresh` was waiting: the previous owners' last watermarks are among them, and a holder silent in them is
   * silent on the broker, not only behind in this reader.
   */
  async catchUp(fresh: readonly string[]): Promise<void> {
    const upToDate = this.#heartbeatsRead && fresh.every(key => this.#waiting.has(key))
    this.#heartbeatsRead = false
    if (upToDate) return
    const timeoutMs = this.#options.livenessTimeoutMs
    await this.#tailer.barrier([{ topic: this.#topic }], { timeoutMs }).catch(error => {
      this.#options.log('warn', 'reading the members topic up to date failed; using what was read', {
        error: String(error)
      })
    })
  }

  /**
   * Through when the schedule was handled before it came here (undefined: wait, a previous owner may still fire
   * it): where the newest holder that fired it stopped, else (never fired anywhere) just before its creation — a
   * tick that fell while it was being placed is not lost.
   */
  sinceFor(
    key: string,
    placement: ContractRecord,
    releases: readonly HeldRelease[],
    creationMs: number,
    now: number
  ): Start | undefined {
    const waitingSince = this.#waiting.get(key) ?? now
    const self = { id: this.#options.dispatcherId, incarnation: this.#options.incarnation, releases }
    const giveUp = now - waitingSince >= HANDOVER_WAIT_MS
    const found = this.#book.resolve(key, holdersOf(self.id, placement), self, giveUp)
    if (found.kind === 'wait') {
      this.#waiting.set(key, waitingSince)
      return undefined
    }
    this.#waiting.delete(key)
    if (found.kind === 'since') return found
    return { at: Number.isFinite(creationMs) ? creationMs - 1 : now }
  }

  /** Watches ticks a live previous owner of `key` still delivers: `onOwed` says what becomes of them. */
  watch(key: string, owed: OwedTicks): void {
    this.#watches.set(key, owed)
    this.#queueRecheck()
  }

  /** Owed ticks watched, over all schedules. */
  get watched(): number {
    let n = 0
    for (const owed of this.#watches.values()) n += owed.ticks.length
    return n
  }

  /** The schedule left this dispatcher: it waits no more, and watches nothing of it. */
  forget(key: string): void {
    this.#waiting.delete(key)
    this.#watches.delete(key)
  }

  /** While schedules wait, look again when the first of them would stop waiting (heartbeats read also do). */
  armTimer(now: number): void {
    clearTimeout(this.#timer)
    this.#timer = undefined
    if (this.#waiting.size === 0 || this.#stopped) return
    let first = Number.POSITIVE_INFINITY
    for (const since of this.#waiting.values()) first = Math.min(first, since)
    this.#timer = setTimeout(() => this.#options.onChange(), Math.max(0, first + HANDOVER_WAIT_MS - now) + 10)
    this.#timer.unref()
  }

  #onMember(record: LogRecord): void {
    const read = memberUpdateOf(record)
    if (read.kind !== 'update') return
    this.#book.apply(read.update)
    this.#queueRecheck()
  }

  /** A schedule waiting for its previous owner may start now, a tick watched may be settled: once per batch read. */
  #queueRecheck(): void {
    if ((this.#waiting.size === 0 && this.#watches.size === 0) || this.#recheckQueued) return
    this.#recheckQueued = true
    queueMicrotask(() => {
      this.#recheckQueued = false
      this.#checkWatches()
      if (this.#waiting.size === 0) return
      this.#heartbeatsRead = true
      this.#options.onChange()
    })
  }

  #checkWatches(): void {
    for (const [key, owed] of this.#watches) {
      const now = this.#book.owedNow(key, owed)
      if (now.answered.length === 0 && now.fire.length === 0) continue
      const settled = new Set([...now.answered, ...now.fire])
      const ticks = owed.ticks.filter(at => !settled.has(at))
      if (ticks.length === 0) this.#watches.delete(key)
      else this.#watches.set(key, { ...owed, ticks })
      this.#options.onOwed(key, now)
    }
  }
}
