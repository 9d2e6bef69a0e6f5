import { performance } from 'node:perf_hooks'
import { EventEmitter } from 'node:events'
import { ErrorCodes, ShoalError } from '../errors/index.ts'
import { LogTailer, readBrokerSettings, unsafeBrokerSettings } from '../kafka/index.ts'
import type { KafkaConnection, LogRecord } from '../kafka/index.ts'
import { DEFAULT_BUCKETS, decodeValue, ordinalOf, storeNames } from '../store/index.ts'
import type { ContractRecord, MemberRecord, StoreNames } from '../store/index.ts'
import { contractPartitionOf } from '../store/index.ts'
import { ContractState } from './contract-state.ts'
import type { EndedHolding } from './contract-state.ts'
import { DEFAULT_SCHEDULE_CAPACITY, checkOptions } from './dispatcher-options.ts'
import type { DispatcherOptions } from './dispatcher-options.ts'
import { ensureDispatcherTopics } from './dispatcher-topics.ts'
import { Heartbeater } from './heartbeater.ts'
import { nextIncarnation } from './incarnation.ts'
import { DEFAULT_LIVENESS_TIMEOUT_MS, fenceAfterOf, heartbeatDeadlineOf, heartbeatIntervalOf } from './liveness.ts'
import { checkMemberRecord } from './record-shapes.ts'
import type { OriginReports, SinkReports } from './sink-reports.ts'
import type { Log } from '../log/index.ts'

/** The least time between two heartbeats asked for by heartbeatSoon. */
export const WATERMARK_BEAT_GAP_MS = 250

/** A contract as it changed: the whole map, the partition offset read through, and whether it runs. */
export interface ContractChange {
  /** Source key (`Kind/namespace/name`) → this dispatcher's placement of it. */
  readonly contract: ReadonlyMap<string, ContractRecord>
  readonly contractOffset: bigint
  readonly running: boolean
}

/** Why a dispatcher stopped for good. */
export type DispatcherStop =
  { readonly kind: 'closed' } | { readonly kind: 'superseded'; readonly incarnation: number; readonly by: number }

export interface DispatcherEvents {
  /** The contract changed (a placement came, changed or went). */
  contract: [ContractChange]
  /** No heartbeat got through for half the liveness timeout: its consumers and schedules must stop. */
  fenced: []
  /** Heartbeats get through again and the contract is read up to date: run it again. */
  unfenced: []
  /** A newer process with the same id heartbeats: this one has stopped for good. */
  superseded: [{ readonly incarnation: number; readonly by: number }]
}

/** A dispatcher following its membership and its contract. */
export interface RunningDispatcher extends EventEmitter<DispatcherEvents> {
  readonly id: string
  readonly zone: string
  readonly node: string
  readonly ordinal: number
  /** This start's incarnation: higher than any earlier start's of the same id. */
  readonly incarnation: number
  /** The current contract, source key → placement (held while fenced). */
  readonly contract: ReadonlyMap<string, ContractRecord>
  /** The highest offset of its contracts partition applied; -1 before any. */
  readonly contractOffset: bigint
  /** Whether its contract may run now: not fenced, not stopped. */
  readonly running: boolean
  readonly fenced: boolean
  /** How many times it has fenced itself since it started. */
  readonly fences: number
  /** The dispatcher liveness timeout it heartbeats under. */
  readonly livenessTimeoutMs: number
  /** Puts the PingSource plane's schedule watermark into every heartbeat from now on. */
  reportWatermark(provider: () => MemberRecord['watermark']): void
  /** Puts its deliverer's flow control gates into every heartbeat from now on (`shoal describe`, the dashboard). */
  reportSinks(provider: () => SinkReports): void
  /** Puts its deliverer's connections to each sink origin into every heartbeat from now on (a stalled sink shows). */
  reportOrigins(provider: () => OriginReports): void
  /**
   * Asks for a heartbeat soon, between the regular ones (at most one per WATERMARK_BEAT_GAP_MS): the PingSource
   * plane's watermark moved (a burst of ticks answered, a schedule released), and the sooner the members topic
   * says so, the less a successor fires twice or waits.
   */
  heartbeatSoon(): void
  /**
   * The schedule placements that went since the last call, each with the offset that had given it — also those
   * given and taken between two `contract` events (the PingSource plane names each as released).
   */
  takeEndedHoldings(): EndedHolding[]
  /** Resolves once it has stopped for good: closed, or superseded by a newer process with the same id. */
  readonly stopped: Promise<DispatcherStop>
  /**
   * Stops heartbeating and following. By default a tombstone heartbeat makes controllers drop it at once;
   * `{ leave: false }` goes silently, as a crash would (controllers drop it after the liveness timeout).
   */
  close(options?: { readonly leave?: boolean }): Promise<void>
}

/**
 * Starts a dispatcher: creates the store's topics if nobody did, picks an incarnation above every earlier
 * start's, reads its contract from the start of its partition, and resolves once a first heartbeat was
 * acknowledged. It then heartbeats, follows its contract, fences itself when cut off, and stops for good when
 * a newer process with its id appears.
 */
export async function startDispatcher(options: DispatcherOptions): Promise<RunningDispatcher> {
  const dispatcher = new Dispatcher(options)
  try {
    await dispatcher.start()
  } catch (error) {
    await dispatcher.close({ leave: false })
    const stop = await dispatcher.stopped
    if (stop.kind === 'superseded') {
      throw new ShoalError(
        ErrorCodes.FENCED,
        `another process started as ${options.id} (incarnation ${stop.by} > ${stop.incarnation})`,
        { cause: error }
      )
    }
    throw error
  }
  return dispatcher
}

class Dispatcher extends EventEmitter<DispatcherEvents> implements RunningDispatcher {
  readonly id: string
  readonly zone: string
  readonly node: string
  readonly ordinal: number
  readonly stopped: Promise<DispatcherStop>
  readonly #options: DispatcherOptions
  readonly #names: StoreNames
  readonly #connection: KafkaConnection
  readonly #livenessTimeoutMs: number
  readonly #log: Log
  readonly #state: ContractState
  readonly #startedAt = new Date().toISOString()
  readonly #members: LogTailer
  readonly #contracts: LogTailer
  readonly #heartbeater: Heartbeater
  readonly #closing = new AbortController()
  #resolveStopped: (stop: DispatcherStop) => void = () => undefined
  #incarnation = 0
  #highestSeen: number | undefined
  #contractPartition: number | undefined
  #snapshot: ReadonlyMap<string, ContractRecord> | undefined
  #emitQueued = false
  #started = false
  #fenced = false
  #fences = 0
  #unfencing = false
  #stop: DispatcherStop | undefined
  #closed: Promise<void> | undefined
  #watermark: (() => MemberRecord['watermark']) | undefined
  #sinks: (() => SinkReports) | undefined
  #origins: (() => OriginReports) | undefined
  #soon: NodeJS.Timeout | undefined
  #lastSoonAt = Number.NEGATIVE_INFINITY

  constructor(options: DispatcherOptions) {
    super()
    checkOptions(options)
    this.#options = options
    this.id = options.id
    this.zone = options.zone
    this.node = options.node
    this.ordinal = ordinalOf(options.id)
    this.#names = storeNames(options.prefix)
    this.#connection = { brokers: options.brokers, clientId: `shoal-${options.id}` }
    this.#livenessTimeoutMs = options.livenessTimeoutMs ?? DEFAULT_LIVENESS_TIMEOUT_MS
    this.#log = options.log ?? (() => undefined)
    this.#state = new ContractState(options.id)
    this.stopped = new Promise(resolve => (this.#resolveStopped = resolve))
    this.#members = new LogTailer({
      connection: { ...this.#connection, clientId: `${this.#connection.clientId}-members` },
      topics: [this.#names.membersTopic],
      onRecord: record => this.#onMemberRecord(record),
      onError: error => this.#log('warn', 'reading the members topic failed; retrying', { error: String(error) })
    })
    this.#contracts = new LogTailer({
      connection: { ...this.#connection, clientId: `${this.#connection.clientId}-contracts` },
      topics: [this.#names.contractsTopic],
      // Only its own partition: with a thousand dispatchers, reading every partition would cost each one the lot.
      partitionFilter: (_topic, partition, count) => partition === contractPartitionOf(this.id, count),
      onRecord: record => this.#onContractRecord(record),
      onError: error => this.#log('warn', 'reading the contracts topic failed; retrying', { error: String(error) })
    })
    this.#heartbeater = new Heartbeater({
      connection: this.#connection,
      topic: this.#names.membersTopic,
      id: this.id,
      intervalMs: heartbeatIntervalOf(this.#livenessTimeoutMs),
      deadlineMs: heartbeatDeadlineOf(this.#livenessTimeoutMs),
      fenceAfterMs: fenceAfterOf(this.#livenessTimeoutMs),
      record: () => this.#heartbeat()
    })
    this.#heartbeater.on('stale', () => this.#fence())
    this.#heartbeater.on('fresh', () => void this.#unfence())
    this.#heartbeater.on('missed', error =>
      this.#log(this.#fenced ? 'warn' : 'info', 'heartbeat not acknowledged', { error: String(error) })
    )
  }

  get incarnation(): number {
    return this.#incarnation
  }

  get contract(): ReadonlyMap<string, ContractRecord> {
    this.#snapshot ??= new Map(this.#state.entries)
    return this.#snapshot
  }

  get contractOffset(): bigint {
    return this.#state.offset
  }

  get running(): boolean {
    return this.#started && !this.#fenced && this.#stop === undefined
  }

  get fenced(): boolean {
    return this.#fenced
  }

  get fences(): number {
    return this.#fences
  }

  get livenessTimeoutMs(): number {
    return this.#livenessTimeoutMs
  }

  reportWatermark(provider: () => MemberRecord['watermark']): void {
    this.#watermark = provider
  }

  reportSinks(provider: () => SinkReports): void {
    this.#sinks = provider
  }

  reportOrigins(provider: () => OriginReports): void {
    this.#origins = provider
  }

  takeEndedHoldings(): EndedHolding[] {
    return this.#state.takeEnded()
  }

  heartbeatSoon(): void {
    if (this.#soon !== undefined || !this.#started || this.#stop !== undefined || this.#fenced) return
    const wait = this.#lastSoonAt + WATERMARK_BEAT_GAP_MS - performance.now()
    const beat = () => {
      this.#soon = undefined
      if (this.#stop !== undefined) return
      this.#lastSoonAt = performance.now()
      void this.#heartbeater.beatFresh()
    }
    // At once when it may: every millisecond before the record is in the log is a tick a SIGKILL would refire.
    if (wait <= 0) return beat()
    this.#soon = setTimeout(beat, wait)
    this.#soon.unref()
  }

  /** Warns, once at start, of broker settings that would let a broker's death fence healthy dispatchers. */
  async #checkBrokerSettings(): Promise<void> {
    try {
      const settings = await readBrokerSettings(this.#connection)
      const heartbeats = {
        fenceAfterMs: fenceAfterOf(this.#livenessTimeoutMs),
        heartbeatIntervalMs: heartbeatIntervalOf(this.#livenessTimeoutMs)
      }
      for (const unsafe of unsafeBrokerSettings(settings, heartbeats)) {
        this.#log('warn', `broker ${unsafe.broker}: ${unsafe.name}=${unsafe.value} is unsafe: ${unsafe.problem}`)
      }
    } catch (error) {
      this.#log('info', 'could not read the brokers’ settings to check them', { error: String(error) })
    }
  }

  async start(): Promise<void> {
    const signal = AbortSignal.any([this.#closing.signal, ...(this.#options.signal ? [this.#options.signal] : [])])
    await ensureDispatcherTopics(this.#connection, this.#names, this.#options.buckets ?? DEFAULT_BUCKETS)
    signal.throwIfAborted()
    void this.#checkBrokerSettings()
    // Read every heartbeat so far: the next incarnation is above the highest this id ever had.
    await this.#members.start()
    await this.#members.barrier([{ topic: this.#names.membersTopic }])
    this.#incarnation = nextIncarnation(this.#highestSeen, Date.now())
    signal.throwIfAborted()
    await this.#contracts.start()
    await this.#contracts.barrier([{ topic: this.#names.contractsTopic, partitions: [this.#partition()] }])
    signal.throwIfAborted()
    const intervalMs = heartbeatIntervalOf(this.#livenessTimeoutMs)
    while (!(await this.#heartbeater.beat())) {
      signal.throwIfAborted()
      await delay(intervalMs, signal)
      signal.throwIfAborted()
    }
    this.#started = true
    this.#heartbeater.start()
    this.#log('info', 'dispatcher up', {
      id: this.id,
      incarnation: this.#incarnation,
      contractPartition: this.#partition(),
      placements: this.#state.entries.size
    })
  }

  close(options: { readonly leave?: boolean } = {}): Promise<void> {
    this.#closed ??= this.#close(options.leave ?? true)
    return this.#closed
  }

  async #close(leave: boolean): Promise<void> {
    const stop = this.#stop ?? { kind: 'closed' }
    this.#stop = stop
    this.#closing.abort()
    clearTimeout(this.#soon)
    await this.#heartbeater.stop()
    // A superseded process must not leave: the tombstone would carry the id the newer process uses.
    if (leave && this.#started && stop.kind === 'closed') {
      // One last heartbeat first: its watermark is exactly where the schedules stopped, for their next owners.
      if (this.#watermark !== undefined && !this.#fenced) await this.#heartbeater.beatFresh()
      if (!(await this.#heartbeater.leave(this.#incarnation))) {
        this.#log('warn', 'the leaving heartbeat was not acknowledged; controllers will time this dispatcher out')
      }
    }
    await Promise.all([this.#heartbeater.close(), this.#members.close(), this.#contracts.close()])
    this.#resolveStopped(stop)
  }

  #partition(): number {
    this.#contractPartition ??= contractPartitionOf(this.id, this.#contracts.partitionCount(this.#names.contractsTopic))
    return this.#contractPartition
  }

  #heartbeat(): MemberRecord {
    const watermark = this.#watermark?.()
    const flow = this.#sinks?.()
    const origins = this.#origins?.()
    return {
      id: this.id,
      incarnation: this.#incarnation,
      ordinal: this.ordinal,
      zone: this.zone,
      node: this.node,
      capacity: {
        consumers: this.#options.capacity,
        schedules: this.#options.scheduleCapacity ?? DEFAULT_SCHEDULE_CAPACITY
      },
      used: this.#state.used(),
      contractOffset: String(this.#state.offset),
      startedAt: this.#startedAt,
      ...(watermark === undefined ? {} : { watermark }),
      ...(flow === undefined || flow.sinks.length === 0 ? {} : { sinks: flow.sinks }),
      ...(flow?.partial === true ? { sinksPartial: true } : {}),
      ...(origins === undefined || origins.origins.length === 0 ? {} : { origins: origins.origins }),
      ...(origins?.partial === true ? { originsPartial: true } : {})
    }
  }

  #onMemberRecord(record: LogRecord): void {
    if (record.key?.toString() !== this.id) return
    const decoded = decodeValue(record.value, record.headers)
    if (decoded.kind !== 'value') return
    const checked = checkMemberRecord(decoded.value)
    if (checked.kind !== 'ok') return
    const incarnation = checked.record.incarnation
    if (this.#incarnation === 0) {
      if (this.#highestSeen === undefined || incarnation > this.#highestSeen) this.#highestSeen = incarnation
    } else if (incarnation > this.#incarnation) {
      void this.#supersede(incarnation).catch(error =>
        this.#log('error', 'stopping a superseded dispatcher failed', { error: String(error) })
      )
    }
  }

  async #supersede(by: number): Promise<void> {
    if (this.#stop !== undefined) return
    this.#stop = { kind: 'superseded', incarnation: this.#incarnation, by }
    this.#log('error', `another process started as ${this.id} (incarnation ${by} > ${this.#incarnation}); stopping`, {
      incarnation: this.#incarnation,
      by
    })
    this.emit('superseded', { incarnation: this.#incarnation, by })
    await this.close({ leave: false })
  }

  #onContractRecord(record: LogRecord): void {
    if (record.partition !== this.#partition() || record.key === null) return
    const decoded = decodeValue(record.value, record.headers)
    if (decoded.kind === 'unreadable') {
      this.#log('warn', 'skipping an unreadable contract record', {
        offset: String(record.offset),
        reason: decoded.reason
      })
      return
    }
    const result = this.#state.apply({
      offset: record.offset,
      key: record.key.toString(),
      value: decoded.kind === 'tombstone' ? 'tombstone' : decoded.value
    })
    if (result.kind === 'skipped') {
      this.#log('warn', 'skipping a contract record', { offset: String(record.offset), reason: result.reason })
    } else if (result.kind === 'changed') {
      this.#snapshot = undefined
      // One event per fetch, not per record: the tailer applies a fetch's records in one go.
      if (!this.#emitQueued) {
        this.#emitQueued = true
        queueMicrotask(() => {
          this.#emitQueued = false
          this.emit('contract', { contract: this.contract, contractOffset: this.#state.offset, running: this.running })
        })
      }
    }
  }

  #fence(): void {
    if (!this.#started || this.#fenced || this.#stop !== undefined) return
    this.#fenced = true
    this.#fences++
    this.#log('warn', 'no heartbeat acknowledged for half the liveness timeout: fenced, contract stopped', {
      livenessTimeoutMs: this.#livenessTimeoutMs
    })
    this.emit('fenced')
  }

  /**
   * Heartbeats get through again. Before running the contract again, read it up to date: while this
   * dispatcher was cut off, a leader may have declared it dead and moved its placements away.
   */
  async #unfence(): Promise<void> {
    if (!this.#fenced || this.#unfencing) return
    this.#unfencing = true
    try {
      const intervalMs = heartbeatIntervalOf(this.#livenessTimeoutMs)
      while (this.#fenced && this.#stop === undefined && !this.#heartbeater.stale) {
        try {
          await this.#contracts.barrier([{ topic: this.#names.contractsTopic, partitions: [this.#partition()] }])
          break
        } catch (error) {
          this.#log('warn', 'reading the contract up to date failed; retrying', { error: String(error) })
          await delay(intervalMs, this.#closing.signal)
        }
      }
      if (!this.#fenced || this.#stop !== undefined || this.#heartbeater.stale) return
      this.#fenced = false
      this.#log('info', 'heartbeats acknowledged again: unfenced, contract running', {
        placements: this.#state.entries.size
      })
      this.emit('unfenced')
    } finally {
      this.#unfencing = false
    }
  }
}

function delay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise(resolve => {
    if (signal.aborted) return resolve()
    const timer = setTimeout(resolve, ms)
    signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true })
  })
}
