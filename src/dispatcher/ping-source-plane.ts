import type { Deliverer, DeliveryTarget } from '../delivery/index.ts'
import { LogTailer } from '../kafka/index.ts'
import type { LogRecord } from '../kafka/index.ts'
import {
  DEFAULT_LATE_POLICY,
  PingEventBuilder,
  RELEASE_DRAIN_MS,
  ScheduleTable,
  StringPool,
  TickFeeder,
  TickLedger,
  TickTimer,
  WatermarkBook,
  endedHoldings,
  finishRelease,
  heartbeatWatermark,
  holdersOf,
  latePolicyOf,
  pingRecordOf,
  pingTargetOf,
  releaseSchedule
} from '../ping/index.ts'
import type { Firing, LatePolicy, PingRecord, ScheduleSpec, ScheduleWatermark, Stopping, Tick } from '../ping/index.ts'
import { decodeValue, isPingSource, memberUpdateOf, storeNames, storedObjectOf } from '../store/index.ts'
import type { ContractRecord } from '../store/index.ts'
import type { RunningDispatcher } from './dispatcher.ts'
import type { DispatcherLog } from './log.ts'
import { MemoryReleaser } from './memory-release.ts'

export interface PingSourcePlaneOptions {
  /** The Kafka that holds Shoal's store. */
  readonly brokers: readonly string[]
  readonly prefix?: string
  readonly dispatcherId: string
  /** This process's incarnation: its own heartbeats are not a previous owner's. */
  readonly incarnation: number
  readonly livenessTimeoutMs: number
  readonly serviceUrlTemplate: string
  /** The dispatcher's one Deliverer, shared with the KafkaSource plane (connection caps per sink origin). */
  readonly deliverer: Deliverer
  /** What to do with missed ticks when a source's annotation does not say (default `all`). */
  readonly latePolicy?: LatePolicy
  /** Under `all`, the most missed ticks of one schedule fired in one go (default 100). */
  readonly maxLateTicks?: number
  /**
   * After this many PingSources read or started, the plane gives the memory the load left behind back to the
   * system once loading has been quiet for a while and no tick is due soon (see MemoryReleaser). Default
   * 1,000; 0 never.
   */
  readonly releaseMemoryAfter?: number
  readonly log: DispatcherLog
  /** Wall clock, epoch ms (default Date.now). */
  readonly now?: () => number
  /** Told when the watermark moved (a burst of ticks answered, a schedule released): a heartbeat soon says so. */
  readonly onWatermark?: () => void
}

interface Running {
  /** The contract's resourceVersion it was started for (its spec is that version's or a later one's). */
  readonly version: string
  readonly builder: PingEventBuilder
  readonly target: DeliveryTarget | undefined
}

/** How long a closing plane lets deliveries in flight finish before it aborts them (they are fired again). */
const CLOSE_DRAIN_MS = 2_000
/**
 * How long a schedule that came here waits for a live previous owner to say it stopped (its release in a
 * heartbeat, one heartbeat interval after it read its contract) before it starts from that owner's newest
 * heartbeat anyway: then both fire for a while, same ids.
 */
export const HANDOVER_WAIT_MS = 10_000
/** The default of PingSourcePlaneOptions.releaseMemoryAfter. */
export const DEFAULT_RELEASE_MEMORY_AFTER = 1_000
/** A memory release pauses the event loop: not when a tick is due sooner than this. */
const RELEASE_CLEARANCE_MS = 2_000

/**
 * The PingSource data plane of one dispatcher: the schedules in its contract in one ScheduleTable with one
 * timer, each tick an event delivered through the dispatcher's shared Deliverer. It reads the sources' specs
 * from the resources topic (the version its contract names, or later) and every dispatcher's heartbeat
 * watermark from the members topic: a schedule that comes to it fires the ticks its previous owner missed,
 * late and marked. Fenced, it fires nothing and aborts what is in flight; its watermark stays where it was.
 */
export class PingSourcePlane {
  readonly #options: PingSourcePlaneOptions
  readonly #now: () => number
  // Every PingSource read, as what firing it needs (not the stored object: a dispatcher may read 100,000).
  readonly #resources = new Map<string, PingRecord>()
  readonly #strings = new StringPool()
  readonly #resourcesTailer: LogTailer
  readonly #membersTailer: LogTailer
  readonly #membersTopic: string
  readonly #book: WatermarkBook
  readonly #table: ScheduleTable
  readonly #ledger = new TickLedger()
  readonly #timer: TickTimer
  readonly #sources = new Map<string, Running>()
  readonly #warned = new Set<string>()
  readonly #feeder: TickFeeder
  readonly #memory: MemoryReleaser
  // Deliveries handed to the Deliverer and not settled; close() waits for them to reach zero.
  #inFlight = 0
  #drained: Array<() => void> = []
  #wanted: ReadonlyMap<string, ContractRecord> = new Map()
  #contractOffset = -1n
  // Schedules of the contract whose start waits for a previous owner: since when (local clock).
  readonly #waiting = new Map<string, number>()
  #waitTimer: NodeJS.Timeout | undefined
  #recheckQueued = false
  // Deliveries in flight per schedule, and schedules that left while some were: released when they are answered.
  readonly #inFlightOf = new Map<string, number>()
  readonly #stopping = new Map<string, Stopping>()
  #stopTimer: NodeJS.Timeout | undefined
  // Set when the heartbeats just read are what calls the next reconcile: the book is up to date without a barrier.
  #heartbeatsRead = false
  #running = false
  #paused = false
  #closed = false
  #abort = new AbortController()
  #applying: Promise<void> = Promise.resolve()

  constructor(options: PingSourcePlaneOptions) {
    this.#options = options
    this.#now = options.now ?? Date.now
    const names = storeNames(options.prefix)
    this.#membersTopic = names.membersTopic
    this.#book = new WatermarkBook({ livenessTimeoutMs: options.livenessTimeoutMs })
    this.#table = new ScheduleTable(options.maxLateTicks === undefined ? {} : { maxLateTicks: options.maxLateTicks })
    this.#timer = new TickTimer({ table: this.#table, now: this.#now, onFiring: firing => this.#fire(firing) })
    this.#feeder = new TickFeeder({ handOut: tick => this.#deliver(tick) })
    this.#memory = new MemoryReleaser({
      threshold: options.releaseMemoryAfter ?? DEFAULT_RELEASE_MEMORY_AFTER,
      canPause: () => {
        const next = this.#table.nextTime()
        return this.#feeder.pending === 0 && (next === undefined || next - this.#now() > RELEASE_CLEARANCE_MS)
      },
      onRelease: release =>
        options.log('info', 'released the memory left by loading PingSources', {
          records: release.records,
          pauseMs: Math.round(release.pauseMs),
          rssMb: { before: Math.round(release.rssBefore / 2 ** 20), after: Math.round(release.rssAfter / 2 ** 20) }
        })
    })
    this.#resourcesTailer = new LogTailer({
      connection: { brokers: options.brokers, clientId: `shoal-${options.dispatcherId}-ping-resources` },
      topics: [names.resourcesTopic],
      onRecord: record => this.#onResource(record),
      onError: error => options.log('warn', 'reading the sources failed; retrying', { error: String(error) })
    })
    this.#membersTailer = new LogTailer({
      connection: { brokers: options.brokers, clientId: `shoal-${options.dispatcherId}-ping-members` },
      topics: [names.membersTopic],
      onRecord: record => this.#onMember(record),
      onError: error => options.log('warn', 'reading the members topic failed; retrying', { error: String(error) })
    })
  }

  async start(): Promise<void> {
    await Promise.all([this.#resourcesTailer.start(), this.#membersTailer.start()])
  }

  /**
   * Runs what the contract (read through `contractOffset`) says, or nothing while the dispatcher is fenced.
   * A schedule that left it stops here and now, so the first heartbeat that reflects this contract names its
   * release: its next owner waits for that.
   */
  apply(
    contract: ReadonlyMap<string, ContractRecord>,
    running: boolean,
    contractOffset: bigint,
    ended: ReadonlyArray<{ readonly source: string; readonly heldSince: string }> = []
  ): void {
    if (this.#closed) return
    const wanted = new Map([...contract].filter(([key]) => key.startsWith('PingSource/')))
    const now = this.#now()
    const gone = endedHoldings(this.#wanted, wanted, ended)
    for (const { key, heldSince } of gone) this.#release(key, heldSince, now)
    // Back before its ticks in flight were answered: released now, so that its own release answers for it.
    for (const key of wanted.keys()) if (this.#stopping.has(key)) this.#finish(key, now)
    if (gone.length > 0) this.#options.onWatermark?.()
    this.#wanted = wanted
    this.#contractOffset = contractOffset
    this.#running = running
    // Fenced: nothing fires from now on, not only once the queued reconcile runs.
    if (!running) this.#pause()
    this.#schedule()
  }

  /**
   * The watermark for this dispatcher's next heartbeat: how far its schedules are handled (fired through, and
   * the schedules with ticks out), the schedules it gave up lately and those it has not started.
   */
  watermark(): ScheduleWatermark {
    const pending: string[] = []
    for (const key of this.#wanted.keys()) if (!this.#sources.has(key)) pending.push(key)
    return heartbeatWatermark(this.#table, this.#ledger, pending, this.#contractOffset, this.#now(), this.#stopping)
  }

  /** Schedules running, and ticks out but not handled. */
  status(): { readonly schedules: number; readonly expressions: number; readonly openSchedules: number } {
    return {
      schedules: this.#table.size,
      expressions: this.#table.distinctExpressions,
      openSchedules: this.#ledger.openKeys
    }
  }

  /** Stops firing, lets deliveries in flight finish for a moment, aborts the rest (fired again by the next owner). */
  async close(): Promise<void> {
    this.#closed = true
    this.#running = false
    this.#timer.stop()
    clearTimeout(this.#waitTimer)
    this.#memory.close()
    await this.#applying
    let timer: NodeJS.Timeout | undefined
    await Promise.race([
      this.#feeder.idle().then(() => this.#settled()),
      new Promise(resolve => (timer = setTimeout(resolve, CLOSE_DRAIN_MS)))
    ])
    clearTimeout(timer)
    // Ticks not handed out stay open (fired again by the next owner); those in flight end as aborted.
    this.#feeder.clear()
    this.#abort.abort()
    await this.#settled()
    clearTimeout(this.#stopTimer)
    for (const key of [...this.#stopping.keys()]) this.#finish(key, this.#now())
    await Promise.all([this.#resourcesTailer.close(), this.#membersTailer.close()])
  }

  #onResource(record: LogRecord): void {
    const key = record.key?.toString('utf8')
    if (!key?.startsWith('PingSource/')) return
    const decoded = decodeValue(record.value, record.headers)
    const object = decoded.kind === 'value' ? storedObjectOf(decoded.value) : undefined
    if (decoded.kind === 'tombstone') this.#resources.delete(key)
    else if (object !== undefined && isPingSource(object)) {
      const options = { serviceUrlTemplate: this.#options.serviceUrlTemplate, strings: this.#strings }
      this.#resources.set(key, pingRecordOf(object, Number(record.offset), options))
      this.#memory.load(1)
    }
    if (this.#wanted.has(key)) this.#schedule()
  }

  #onMember(record: LogRecord): void {
    const read = memberUpdateOf(record)
    if (read.kind !== 'update') return
    this.#book.apply(read.update)
    // A schedule waiting for its previous owner may start now: once per batch of heartbeats read.
    if (this.#waiting.size > 0 && !this.#recheckQueued) {
      this.#recheckQueued = true
      queueMicrotask(() => {
        this.#recheckQueued = false
        this.#heartbeatsRead = true
        this.#schedule()
      })
    }
  }

  #release(key: string, heldSince: bigint, now: number): void {
    this.#waiting.delete(key)
    const inFlight = (this.#inFlightOf.get(key) ?? 0) > 0
    const stopping = releaseSchedule(this.#table, this.#ledger, key, heldSince, now, inFlight)
    this.#sources.delete(key)
    if (stopping === undefined) return
    this.#stopping.set(key, stopping)
    if (this.#stopTimer === undefined) {
      this.#stopTimer = setTimeout(() => this.#finishDue(), RELEASE_DRAIN_MS + 10)
      this.#stopTimer.unref()
    }
  }

  #finish(key: string, now: number): void {
    const stopping = this.#stopping.get(key)
    if (stopping === undefined) return
    this.#stopping.delete(key)
    finishRelease(this.#ledger, key, stopping, now)
  }

  // Schedules stopping past their drain time are released below their ticks still in flight.
  #finishDue(): void {
    this.#stopTimer = undefined
    const now = this.#now()
    let next = Number.POSITIVE_INFINITY
    for (const [key, stopping] of this.#stopping) {
      if (stopping.until <= now) this.#finish(key, now)
      else next = Math.min(next, stopping.until)
    }
    if (Number.isFinite(next)) {
      this.#stopTimer = setTimeout(() => this.#finishDue(), next - now + 10)
      this.#stopTimer.unref()
    }
    this.#options.onWatermark?.()
  }

  #schedule(): void {
    this.#applying = this.#applying
      .then(() => this.#reconcile())
      .catch(error => this.#options.log('error', 'applying the contract failed', { error: String(error) }))
  }

  async #reconcile(): Promise<void> {
    if (!this.#running) {
      this.#pause()
      return
    }
    const now = this.#now()
    const fresh: Array<[string, PingRecord, string]> = []
    for (const [key, placement] of this.#wanted) {
      const record = this.#specAt(key, placement.resourceVersion)
      if (!record) continue // its spec has not been read yet: the resources record will call us again
      const running = this.#sources.get(key)
      if (running === undefined) fresh.push([key, record, placement.resourceVersion])
      else if (running.version !== placement.resourceVersion) {
        // A new version of a schedule it runs: nothing was missed, it goes on from where the table is.
        this.#start(key, record, placement.resourceVersion, this.#table.firedThrough(key) ?? now, now)
      }
    }
    if (fresh.length > 0) {
      const upToDate = this.#heartbeatsRead && fresh.every(([key]) => this.#waiting.has(key))
      this.#heartbeatsRead = false
      if (!upToDate) {
        // Read every heartbeat appended so far: the previous owners' last watermarks are among them, and a holder
        // silent in them is silent on the broker, not only behind in this reader.
        const timeoutMs = this.#options.livenessTimeoutMs
        await this.#membersTailer.barrier([{ topic: this.#membersTopic }], { timeoutMs }).catch(error => {
          this.#options.log('warn', 'reading the members topic up to date failed; using what was read', {
            error: String(error)
          })
        })
        if (!this.#running) return this.#pause()
      }
      const at = this.#now()
      let started = 0
      for (const [key, record, version] of fresh) {
        const placement = this.#wanted.get(key)
        if (placement === undefined || this.#sources.has(key)) continue
        const since = this.#sinceFor(key, record, placement, at)
        if (since === undefined) continue
        this.#waiting.delete(key)
        this.#start(key, record, version, since, at)
        started++
      }
      this.#memory.load(started)
      this.#armWaitTimer(at)
    }
    if (this.#paused) this.#resume()
    this.#timer.start()
    this.#timer.rearm()
  }

  // Through when the schedule was handled before it came here (undefined: wait, a previous owner may still fire
  // it): where the newest holder that fired it stopped, else (never fired anywhere) just before its creation — a
  // tick that fell while it was being placed is not lost.
  #sinceFor(key: string, record: PingRecord, placement: ContractRecord, now: number): number | undefined {
    const waitingSince = this.#waiting.get(key) ?? now
    const self = {
      id: this.#options.dispatcherId,
      incarnation: this.#options.incarnation,
      releases: this.#ledger.releasesOf(key)
    }
    const found = this.#book.resolve(key, holdersOf(self.id, placement), self, now - waitingSince >= HANDOVER_WAIT_MS)
    if (found.kind === 'wait') {
      this.#waiting.set(key, waitingSince)
      return undefined
    }
    if (found.kind === 'since') return found.at
    return Number.isFinite(record.creationMs) ? record.creationMs - 1 : now
  }

  // While schedules wait, look again when the first of them would stop waiting (heartbeats read also do).
  #armWaitTimer(now: number): void {
    clearTimeout(this.#waitTimer)
    this.#waitTimer = undefined
    if (this.#waiting.size === 0 || this.#closed) return
    let first = Number.POSITIVE_INFINITY
    for (const since of this.#waiting.values()) first = Math.min(first, since)
    this.#waitTimer = setTimeout(() => this.#schedule(), Math.max(0, first + HANDOVER_WAIT_MS - now) + 10)
    this.#waitTimer.unref()
  }

  #start(key: string, record: PingRecord, version: string, since: number, now: number): void {
    const { policy, invalid } = latePolicyOf(record.latePolicy, this.#options.latePolicy ?? DEFAULT_LATE_POLICY)
    if (invalid !== undefined)
      this.#warnOnce(
        `${key}@${record.offset}:policy`,
        `${key}: late-ticks annotation "${invalid}" is not all, last or none; using ${policy}`
      )
    const spec: ScheduleSpec = {
      schedule: record.schedule,
      ...(record.timezone === undefined ? {} : { timezone: record.timezone }),
      creationMs: record.creationMs,
      latePolicy: policy
    }
    this.#sources.set(key, {
      version,
      target: this.#targetOf(key, record),
      builder: new PingEventBuilder(record)
    })
    let firing: Firing
    try {
      firing = this.#table.set(key, spec, since, now)
    } catch (error) {
      this.#sources.delete(key)
      this.#warnOnce(`${key}@${record.offset}:schedule`, `${key}: cannot run its schedule: ${String(error)}`)
      return
    }
    this.#fire(firing)
  }

  #targetOf(key: string, record: PingRecord): DeliveryTarget | undefined {
    if ('unresolved' in record.sink) {
      this.#warnOnce(
        `${key}@${record.offset}:sink`,
        `${key}: spec.sink does not resolve, its ticks are dropped: ${record.sink.unresolved}`
      )
      return undefined
    }
    return pingTargetOf(key, record.sink)
  }

  // Ticks are opened in the ledger at once (the table's `through` has passed them) and handed to the Deliverer
  // in slices across event-loop turns, so the first requests of a burst leave at once.
  #fire(firing: Firing): void {
    for (const key of firing.truncated) {
      this.#options.log('warn', 'missed ticks beyond the late-tick limit were skipped', { source: key })
    }
    for (const tick of firing.ticks) {
      if (this.#sources.get(tick.key)?.target !== undefined) this.#ledger.begin(tick.key, tick.at)
    }
    this.#feeder.push(firing.ticks)
  }

  #deliver(tick: Tick): void {
    const source = this.#sources.get(tick.key)
    // Moved away meanwhile: the tick stays open, its release is below it (its next owner fires it).
    if (source === undefined) return
    if (source.target === undefined) {
      // Its new version's sink does not resolve (warned): the tick is dropped, handled.
      this.#ledger.end(tick.key, tick.at)
      return
    }
    const event = source.builder.event(tick.at, tick.late)
    this.#inFlight++
    this.#inFlightOf.set(tick.key, (this.#inFlightOf.get(tick.key) ?? 0) + 1)
    const generation = this.#ledger.generation(tick.key)
    void this.#options.deliverer.deliver(event, source.target, this.#abort.signal).then(outcome => {
      // An aborted tick stays open: the watermark stays below it, so it is fired again. A tick whose open entry
      // was forgotten since (fired again) is the new copy's to end.
      if (outcome.kind !== 'aborted' && this.#ledger.generation(tick.key) === generation) {
        this.#ledger.end(tick.key, tick.at)
        if (outcome.kind === 'dropped') {
          this.#options.log('warn', 'a tick was dropped', {
            source: tick.key,
            tick: event.attributes.time,
            reason: outcome.reason
          })
        }
      }
      const left = (this.#inFlightOf.get(tick.key) ?? 1) - 1
      if (left > 0) this.#inFlightOf.set(tick.key, left)
      else {
        this.#inFlightOf.delete(tick.key)
        if (this.#stopping.has(tick.key)) {
          this.#finish(tick.key, this.#now())
          this.#options.onWatermark?.()
        }
      }
      if (--this.#inFlight === 0) {
        for (const resolve of this.#drained.splice(0)) resolve()
        this.#options.onWatermark?.()
      }
    })
  }

  // Resolves when no delivery is in flight.
  #settled(): Promise<void> {
    if (this.#inFlight === 0) return Promise.resolve()
    return new Promise(resolve => this.#drained.push(resolve))
  }

  #pause(): void {
    this.#timer.stop()
    if (this.#paused) return
    this.#paused = true
    // Ticks not handed out yet stay open in the ledger, like those aborted in flight: fired again on resume.
    this.#feeder.clear()
    this.#abort.abort()
    this.#abort = new AbortController()
  }

  // Fenced no more: every schedule fires what it missed since its own watermark (ticks aborted at the fence too).
  #resume(): void {
    this.#paused = false
    const through = this.#table.through
    const since = new Map<string, number>()
    for (const key of this.#table.keys()) since.set(key, this.#ledger.watermarkOf(key, through))
    for (const key of since.keys()) this.#ledger.forget(key)
    this.#fire(this.#table.resume(this.#now(), key => since.get(key) ?? through))
  }

  /** The source as stored at the contract's resourceVersion or later. */
  #specAt(key: string, resourceVersion: string): PingRecord | undefined {
    const record = this.#resources.get(key)
    return record && record.offset >= Number(resourceVersion) ? record : undefined
  }

  #warnOnce(id: string, message: string): void {
    if (this.#warned.has(id)) return
    this.#warned.add(id)
    this.#options.log('warn', message)
  }
}

/**
 * Starts the PingSource data plane of a running dispatcher, keeps it in step with the contract and fencing,
 * and puts its watermark into the dispatcher's heartbeats. Close it before the dispatcher.
 */
export async function startPingSourcePlane(
  dispatcher: RunningDispatcher,
  options: Omit<PingSourcePlaneOptions, 'dispatcherId' | 'incarnation' | 'livenessTimeoutMs'>
): Promise<PingSourcePlane> {
  const plane = new PingSourcePlane({
    onWatermark: () => dispatcher.heartbeatSoon(),
    ...options,
    dispatcherId: dispatcher.id,
    incarnation: dispatcher.incarnation,
    livenessTimeoutMs: dispatcher.livenessTimeoutMs
  })
  await plane.start()
  const apply = () =>
    plane.apply(dispatcher.contract, dispatcher.running, dispatcher.contractOffset, dispatcher.takeEndedHoldings())
  dispatcher.on('contract', apply)
  dispatcher.on('fenced', apply)
  dispatcher.on('unfenced', apply)
  dispatcher.reportWatermark(() => plane.watermark())
  apply()
  return plane
}
