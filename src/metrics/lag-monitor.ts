import { LagReader, lagFigures, ratesBetween } from '../lag/index.ts'
import type { LagQuery, LagSample, LagSource } from '../lag/index.ts'

export interface LagMonitorOptions {
  /** The sources to measure now; asked on every round. */
  readonly targets: () => readonly LagSource[]
  /** Default 5 s. */
  readonly intervalMs?: number
  /** How much history to keep per source (default 10 minutes). */
  readonly historyMs?: number
  readonly clientId?: string
  readonly log?: (message: string, error: unknown) => void
  readonly now?: () => number
}

/** A source's latest figures with its rates over the last interval. */
export interface LagSnapshot extends LagSample {
  readonly consumedPerSec: number
  readonly producedPerSec: number
}

export const DEFAULT_LAG_INTERVAL_MS = 5_000
export const DEFAULT_LAG_HISTORY_MS = 10 * 60_000

/**
 * Measures every KafkaSource's consumer lag every few seconds through the one LagReader (so /metrics, the
 * dashboard and the autoscaler agree on it), with one request of each kind per Kafka cluster
 * per round (metadata for the partitions, ListOffsets read_committed for the ends, OffsetFetch for all the groups
 * at once), and keeps a short history per source for rates and the dashboard. Lag is the group's: it spans every
 * dispatcher the source is placed on, which is why the control plane measures it, not a dispatcher.
 */
export class LagMonitor {
  readonly #options: LagMonitorOptions
  readonly #reader: LagReader
  readonly #history = new Map<string, LagSample[]>()
  /** The `netProblem` last logged per source, so that it is logged once, not every round. */
  readonly #netProblems = new Map<string, string>()
  readonly #listeners = new Set<() => void>()
  readonly #now: () => number
  #timer: NodeJS.Timeout | undefined
  #round: Promise<void> | undefined
  #stopped = false

  constructor(options: LagMonitorOptions) {
    this.#options = options
    this.#reader = new LagReader(options.clientId ?? 'shoal-lag-monitor')
    this.#now = options.now ?? Date.now
  }

  start(): void {
    if (this.#timer || this.#stopped) return
    const tick = () => {
      this.#round = this.measure().finally(() => {
        if (!this.#stopped) this.#timer = setTimeout(tick, this.#options.intervalMs ?? DEFAULT_LAG_INTERVAL_MS)
      })
    }
    this.#timer = setTimeout(tick, 0)
  }

  async stop(): Promise<void> {
    this.#stopped = true
    clearTimeout(this.#timer)
    await this.#round?.catch(() => undefined)
    await this.#reader.close()
  }

  /** Called after every round. */
  onRound(listener: () => void): () => void {
    this.#listeners.add(listener)
    return () => this.#listeners.delete(listener)
  }

  /** The latest reading of every source measured in the last round. */
  readings(): Map<string, LagSnapshot> {
    const out = new Map<string, LagSnapshot>()
    for (const [key, samples] of this.#history) {
      const last = samples.at(-1)
      if (!last) continue
      const before = samples.at(-2)
      out.set(key, { ...last, ...(before ? ratesBetween(before, last) : { consumedPerSec: 0, producedPerSec: 0 }) })
    }
    return out
  }

  /** A source's samples, oldest first, over the history window. */
  history(key: string): readonly LagSample[] {
    return this.#history.get(key) ?? []
  }

  /**
   * One round now: measures every target through the LagReader (one request of each kind per cluster and
   * credentials); a source whose cluster does not answer is left out of this round, and the reason logged once.
   */
  async measure(): Promise<void> {
    const targets = this.#options.targets()
    const queries: LagQuery[] = []
    for (const { query, netProblem } of targets) {
      if (netProblem !== undefined) {
        if (this.#netProblems.get(query.id) !== netProblem) {
          this.#netProblems.set(query.id, netProblem)
          this.#options.log?.(`could not measure the lag of ${query.id}`, netProblem)
        }
        continue
      }
      this.#netProblems.delete(query.id)
      queries.push(query)
    }
    const at = this.#now()
    const readings = await this.#reader.read(queries)
    const problems = new Set<string>()
    for (const [key, reading] of readings) {
      if (reading.kind === 'lag') this.#append(key, { at, ...lagFigures(reading.partitions) })
      else problems.add(reading.reason)
    }
    for (const reason of problems) this.#options.log?.('could not measure the lag of some sources', reason)
    // Sources that are gone lose their history.
    const live = new Set(targets.map(t => t.query.id))
    for (const key of this.#history.keys()) if (!live.has(key)) this.#history.delete(key)
    for (const key of this.#netProblems.keys()) if (!live.has(key)) this.#netProblems.delete(key)
    for (const listener of this.#listeners) listener()
  }

  #append(key: string, sample: LagSample): void {
    const samples = this.#history.get(key) ?? []
    samples.push(sample)
    const horizon = sample.at - (this.#options.historyMs ?? DEFAULT_LAG_HISTORY_MS)
    while (samples.length > 0 && samples[0]!.at < horizon) samples.shift()
    this.#history.set(key, samples)
  }
}
