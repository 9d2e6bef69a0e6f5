import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'

/**
 * Gives the memory a large load left behind back to the system, once the load is over.
 *
 * Reading 100,000 PingSources decodes 100,000 JSON records whose garbage V8 frees into its page pool, and a quiet
 * dispatcher keeps that pool resident: V8's memory reducer waits for the allocation rate to fall, and a process
 * that allocates next to nothing takes no new samples of it (measured: 127 MB pooled after loading 100,000
 * schedules, 263–326 MB of RSS; after one memory-reducing collection 177–190 MB — docs/dispatcher.md#memory).
 * So after `threshold` records loaded, and `quietMs` without more, the dispatcher runs one full, memory-reducing
 * collection — a pause of its event loop (~0.2 s at 100,000 schedules) — at a moment `canPause` allows (no tick
 * due soon, no burst being handed out), checked again every second until then.
 */
export interface MemoryReleaserOptions {
  /** Records loaded (decoded, registered) since the last release that make the next one worth its pause. */
  readonly threshold: number
  /** How long loading must have stopped before releasing. Default 10 s. */
  readonly quietMs?: number
  /** Whether a pause of the event loop is harmless now. Default: always. */
  readonly canPause?: () => boolean
  /** Told of every release: how long the pause was, and RSS before and after. */
  readonly onRelease?: (release: MemoryRelease) => void
  /** The collection itself (default: V8's memory-reducing full GC). */
  readonly collect?: () => void
}

export interface MemoryRelease {
  readonly records: number
  readonly pauseMs: number
  readonly rssBefore: number
  readonly rssAfter: number
}

/** Retries `canPause` every second. */
const RETRY_MS = 1_000

export class MemoryReleaser {
  readonly #options: MemoryReleaserOptions
  readonly #quietMs: number
  #loaded = 0
  #timer: NodeJS.Timeout | undefined
  #armedFor = 0
  #closed = false

  constructor(options: MemoryReleaserOptions) {
    if (!Number.isSafeInteger(options.threshold) || options.threshold < 0) {
      throw new RangeError(`threshold ${options.threshold} is not a whole number of records`)
    }
    this.#options = options
    this.#quietMs = options.quietMs ?? 10_000
  }

  /** Records since the last release. */
  get loaded(): number {
    return this.#loaded
  }

  /** Counts `count` records just loaded; once past the threshold, a release follows the next quiet spell. */
  load(count: number): void {
    if (this.#closed || count <= 0 || this.#options.threshold === 0) return
    this.#loaded += count
    if (this.#loaded < this.#options.threshold) return
    // A load of 100,000 calls this 100,000 times: the quiet timer is restarted, not replaced.
    if (this.#timer !== undefined && this.#armedFor === this.#quietMs) this.#timer.refresh()
    else this.#arm(this.#quietMs)
  }

  close(): void {
    this.#closed = true
    clearTimeout(this.#timer)
    this.#timer = undefined
  }

  #arm(ms: number): void {
    clearTimeout(this.#timer)
    this.#armedFor = ms
    this.#timer = setTimeout(() => this.#release(), ms)
    this.#timer.unref()
  }

  #release(): void {
    this.#timer = undefined
    if (this.#closed) return
    if (this.#options.canPause && !this.#options.canPause()) return this.#arm(RETRY_MS)
    const records = this.#loaded
    this.#loaded = 0
    const rssBefore = process.memoryUsage.rss()
    const started = performance.now()
    ;(this.#options.collect ?? reduceMemory)()
    const pauseMs = performance.now() - started
    this.#options.onRelease?.({ records, pauseMs, rssBefore, rssAfter: process.memoryUsage.rss() })
  }
}

let collector: ((options: unknown) => void) | undefined

/**
 * V8's memory-reducing full collection (what it runs under memory pressure): collects everything it can and
 * returns its pooled pages to the system. Node.js exposes V8's `gc` only under --expose-gc; setting that flag now
 * gives it to a new context, which is where it is taken from.
 */
export function reduceMemory(): void {
  if (collector === undefined) {
    setFlagsFromString('--expose-gc')
    collector = runInNewContext('gc') as (options: unknown) => void
  }
  collector({ type: 'major', execution: 'sync', flavor: 'last-resort' })
}
