import { autoscaleSetting } from './annotations.ts'
import type { AutoscaleConfig } from './annotations.ts'
import { decide, initialState } from './decide.ts'
import type { ScaleReason, ScaleState } from './decide.ts'
import { LagReader } from '../lag/index.ts'
import type { LagReading, LagSource } from '../lag/index.ts'
import type { Log } from '../log/index.ts'

/** A KafkaSource as the autoscaler needs it; with a `netProblem`, an autoscaled source holds its scale for that reason. */
export interface AutoscaleTarget extends LagSource {
  readonly key: string
  readonly annotations: Readonly<Record<string, string>> | undefined
  readonly paused: boolean
}

/** The lag of a KafkaSource that is not autoscaled is read too, for `shoal get -o wide`, but this seldom. */
const OBSERVE_INTERVAL_MS = 5_000

/** One source as `GET /shoal/v1/autoscaling` shows it: autoscaled, or only observed (its lag, for display). */
export interface AutoscaleStatus {
  readonly source: string
  readonly autoscaled: boolean
  /** The autoscaler's scale; absent for a source that is not autoscaled. */
  readonly scale?: number
  readonly paused: boolean
  /** Total lag at the last successful poll; absent before the first. */
  readonly lag?: number
  readonly partitions?: number
  readonly reason?: ScaleReason | 'paused' | 'new'
  /** Why the lag could not be read, while the scale holds. */
  readonly message?: string
  /** ISO-8601 time of the last poll. */
  readonly polledAt?: string
  readonly config?: AutoscaleConfig
}

export interface AutoscalerOptions {
  /** Every KafkaSource now (the leader's copy of the store). */
  readonly targets: () => Iterable<AutoscaleTarget>
  /** The scale the log last recorded for a source (placed + pending vreplicas), so a new leader carries on from it. */
  readonly recordedScale: (key: string) => number | undefined
  /** Called when a source's scale changes: the scheduler places it again. */
  readonly onScale: (key: string) => void
  readonly log: Log
  readonly reader?: Pick<LagReader, 'read' | 'close'>
  readonly clock?: () => number
}

interface Followed {
  config: AutoscaleConfig
  state: ScaleState
  reason: NonNullable<AutoscaleStatus['reason']>
  message?: string
  lag?: number
  partitions?: number
  polledAtMs?: number
  paused: boolean
}

/**
 * The autoscalers of the scheduler leader: for each KafkaSource with the KEDA class annotation, polls its lag every
 * polling interval (all due sources in one batch per Kafka cluster) and decides its vreplicas with `decide`. The
 * decision feeds the scheduler as the source's vreplicas; `spec.consumers` is left as the user wrote it (it applies
 * again when the annotation goes). State is in memory; a new leader starts from the scales the log recorded.
 */
export class Autoscaler {
  readonly #options: AutoscalerOptions
  readonly #reader: Pick<LagReader, 'read' | 'close'>
  readonly #clock: () => number
  readonly #followed = new Map<string, Followed>()
  /** Sources that are not autoscaled: their last lag reading, for display. */
  readonly #observed = new Map<string, { lag?: number; partitions?: number; message?: string; polledAtMs: number }>()
  #timer: NodeJS.Timeout | undefined
  #polling: Promise<void> = Promise.resolve()
  #stopped = false

  constructor(options: AutoscalerOptions) {
    this.#options = options
    this.#reader = options.reader ?? new LagReader('shoal-autoscaler')
    this.#clock = options.clock ?? (() => Date.now())
  }

  start(): void {
    this.#next(0)
  }

  async stop(): Promise<void> {
    this.#stopped = true
    clearTimeout(this.#timer)
    await this.#polling.catch(() => undefined)
    await this.#reader.close()
  }

  /** The vreplicas of an autoscaled source; undefined when it is not autoscaled (spec.consumers applies). */
  scaleOf(target: AutoscaleTarget): number | undefined {
    const followed = this.#follow(target)
    return followed?.state.scale
  }

  /** Why a source's scale holds (its lag cannot be read), if it does. */
  heldBecause(key: string): string | undefined {
    const followed = this.#followed.get(key)
    return followed?.reason === 'held' ? followed.message : undefined
  }

  status(): AutoscaleStatus[] {
    const observed: AutoscaleStatus[] = [...this.#observed].map(([source, o]) => ({
      source,
      autoscaled: false,
      paused: false,
      ...(o.lag === undefined ? {} : { lag: o.lag }),
      ...(o.partitions === undefined ? {} : { partitions: o.partitions }),
      ...(o.message === undefined ? {} : { message: o.message }),
      polledAt: new Date(o.polledAtMs).toISOString()
    }))
    return [...observed, ...this.#statusOfFollowed()]
  }

  #statusOfFollowed(): AutoscaleStatus[] {
    return [...this.#followed].map(([source, f]) => ({
      source,
      autoscaled: true,
      scale: f.state.scale,
      paused: f.paused,
      ...(f.lag === undefined ? {} : { lag: f.lag }),
      ...(f.partitions === undefined ? {} : { partitions: f.partitions }),
      reason: f.paused ? 'paused' : f.reason,
      ...(f.message === undefined ? {} : { message: f.message }),
      ...(f.polledAtMs === undefined ? {} : { polledAt: new Date(f.polledAtMs).toISOString() }),
      config: f.config
    }))
  }

  /** The state of a source, created (from the log's scale, or min-scale) the first time it is seen autoscaled. */
  #follow(target: AutoscaleTarget): Followed | undefined {
    const setting = autoscaleSetting(target.annotations)
    if (setting.kind !== 'on') {
      this.#followed.delete(target.key)
      return undefined
    }
    let followed = this.#followed.get(target.key)
    if (!followed) {
      const recorded = this.#options.recordedScale(target.key)
      followed = {
        config: setting.config,
        state: initialState(recorded ?? setting.config.minScale, this.#clock()),
        reason: 'new',
        paused: target.paused
      }
      this.#followed.set(target.key, followed)
    }
    followed.config = setting.config
    followed.paused = target.paused
    return followed
  }

  #next(delay: number): void {
    if (this.#stopped) return
    this.#timer = setTimeout(() => {
      this.#polling = this.#poll()
        .catch(error => this.#options.log('error', 'an autoscaler poll failed', { error: String(error) }))
        .finally(() => this.#next(this.#interval()))
    }, delay)
  }

  /** The shortest polling interval among followed sources (1 s when none). */
  #interval(): number {
    let interval = 1_000
    for (const f of this.#followed.values()) interval = Math.min(interval, f.config.pollingIntervalMs)
    return interval
  }

  async #poll(): Promise<void> {
    const now = this.#clock()
    const seen = new Set<string>()
    const due: AutoscaleTarget[] = []
    for (const target of this.#options.targets()) {
      seen.add(target.key)
      const had = this.#followed.has(target.key)
      const followed = this.#follow(target)
      if (!followed) {
        if (had) this.#options.onScale(target.key) // back to spec.consumers
        const observed = this.#observed.get(target.key)
        if (!target.paused && (!observed || now - observed.polledAtMs >= OBSERVE_INTERVAL_MS)) due.push(target)
        continue
      }
      this.#observed.delete(target.key)
      if (!had) this.#options.onScale(target.key)
      if (followed.paused) continue
      // Due when its interval has passed; a little early is fine, so one batch serves sources of equal intervals.
      if (followed.polledAtMs === undefined || now - followed.polledAtMs >= followed.config.pollingIntervalMs - 50) {
        due.push(target)
      }
    }
    for (const key of [...this.#followed.keys()]) if (!seen.has(key)) this.#followed.delete(key)
    for (const key of [...this.#observed.keys()]) if (!seen.has(key)) this.#observed.delete(key)
    if (due.length === 0) return
    // A source whose spec.net cannot be resolved is not read: its lag is unreadable for that reason.
    const readable = due.filter(t => t.netProblem === undefined).map(t => t.query)
    const readings = readable.length > 0 ? await this.#reader.read(readable) : new Map<string, LagReading>()
    if (this.#stopped) return
    const at = this.#clock()
    for (const target of due) {
      const key = target.key
      const followed = this.#followed.get(key)
      const reading: LagReading =
        target.netProblem !== undefined
          ? { kind: 'unreadable', reason: target.netProblem }
          : (readings.get(key) ?? { kind: 'unreadable', reason: 'no answer' })
      if (!followed) {
        this.#observed.set(
          key,
          reading.kind === 'lag'
            ? { lag: reading.totalLag, partitions: reading.partitions.length, polledAtMs: at }
            : { message: reading.reason, polledAtMs: at }
        )
        continue
      }
      if (followed.paused) continue
      this.#apply(key, followed, reading, at)
    }
  }

  #apply(key: string, followed: Followed, reading: LagReading, at: number): void {
    const observation =
      reading.kind === 'lag'
        ? { kind: 'lag' as const, totalLag: reading.totalLag, partitions: reading.partitions.length }
        : reading
    const before = followed.state.scale
    const wasHeld = followed.reason === 'held'
    const decision = decide(followed.config, followed.state, observation, at)
    followed.state = decision.state
    followed.polledAtMs = at
    if (wasHeld && decision.reason !== 'held')
      this.#options.log('info', 'autoscaler reads the lag again', { source: key })
    if (!wasHeld && decision.reason === 'held')
      this.#options.log('warn', 'autoscaler cannot read the lag; the scale holds', {
        source: key,
        reason: decision.message
      })
    followed.reason = decision.reason
    if (decision.message === undefined) delete followed.message
    else followed.message = decision.message
    if (reading.kind === 'lag') {
      followed.lag = reading.totalLag
      followed.partitions = reading.partitions.length
    }
    if (decision.state.scale !== before) {
      this.#options.log('info', 'autoscaled', {
        source: key,
        from: before,
        to: decision.state.scale,
        lag: followed.lag,
        reason: decision.reason
      })
    }
    // A new scale, or the lag becoming (un)readable: the scheduler writes the source's placements record again.
    if (decision.state.scale !== before || wasHeld !== (decision.reason === 'held')) this.#options.onScale(key)
  }
}
