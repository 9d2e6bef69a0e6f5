import type { DeliveryTarget } from '../delivery/index.ts'
import type { PlaneContract, PlaneHost, SourcePlane } from '../plane/index.ts'
import { isPingSource } from '../store/index.ts'
import type { ContractRecord } from '../store/index.ts'
import { endedHoldings, heartbeatWatermark, releaseSchedule } from './hand-over.ts'
import { DEFAULT_LATE_POLICY, latePolicyOf } from './late-policy.ts'
import type { LatePolicy } from './late-policy.ts'
import { MemoryReleaser } from './memory-release.ts'
import { PingEventBuilder } from './ping-event.ts'
import { StringPool, pingRecordOf, pingTargetOf } from './ping-record.ts'
import type { PingRecord } from './ping-record.ts'
import { PreviousOwners } from './previous-owners.ts'
import { ScheduleTable } from './schedule-table.ts'
import type { Firing, ScheduleSpec, Tick } from './schedule-table.ts'
import { TickFeeder } from './tick-feeder.ts'
import { TickTimer } from './tick-timer.ts'
import { TickLedger } from './tick-ledger.ts'
import type { ScheduleWatermark } from '../store/index.ts'

/** What only the PingSource plane takes; the rest comes from its dispatcher (PlaneHost). */
export interface PingSourcePlaneOptions {
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
  /** Wall clock, epoch ms (default Date.now). */
  readonly now?: () => number
}

/** Where a schedule's ticks go: its sink, or why it cannot be resolved (the ticks wait, the status says why). */
type PingTarget =
  | { readonly kind: 'resolved'; readonly target: DeliveryTarget }
  | { readonly kind: 'unresolved'; readonly message: string }

interface Running {
  /** The contract's resourceVersion it was started for (its spec is that version's or a later one's). */
  readonly version: string
  readonly builder: PingEventBuilder
  readonly target: PingTarget
  /**
   * The tick an unresolved version holds open: its first, whatever ticks of an older version are still in flight
   * (undefined before it fires one, and always for a resolved version). Its ticks from there are not handled.
   */
  held: number | undefined
}

/** How long a closing plane lets deliveries in flight finish before it aborts them (they are fired again). */
const CLOSE_DRAIN_MS = 2_000
/** The default of PingSourcePlaneOptions.releaseMemoryAfter. */
export const DEFAULT_RELEASE_MEMORY_AFTER = 1_000
/** A memory release pauses the event loop: not when a tick is due sooner than this. */
const RELEASE_CLEARANCE_MS = 2_000

/**
 * The PingSource data plane of one dispatcher: the schedules in its contract in one ScheduleTable with one
 * timer, each tick an event delivered through the dispatcher's shared Deliverer. It reads the sources' specs
 * through the shared resources reader (the version its contract names, or later) and every dispatcher's
 * heartbeat watermark from the members topic: a schedule that comes to it fires the ticks its previous owner
 * missed, late and marked. Fenced, it fires nothing and aborts what is in flight; its watermark stays where it
 * was. A schedule whose sink cannot be resolved holds its first tick open (retried when a version of it
 * resolves, or by its next owner) and its status says why, as a KafkaSource's does.
 */
export class PingSourcePlane implements SourcePlane {
  readonly kind = 'PingSource'
  readonly #host: PlaneHost
  readonly #options: PingSourcePlaneOptions
  readonly #now: () => number
  // Every PingSource read, as what firing it needs (not the stored object: a dispatcher may read 100,000).
  readonly #resources = new Map<string, PingRecord>()
  readonly #strings = new StringPool()
  readonly #owners: PreviousOwners
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
  // The ticks in flight per schedule: a schedule that leaves names them owed in its release (it still delivers them).
  readonly #inFlightOf = new Map<string, number[]>()
  #running = false
  #paused = false
  #closed = false
  #abort = new AbortController()
  #applying: Promise<void> = Promise.resolve()

  constructor(host: PlaneHost, options: PingSourcePlaneOptions = {}) {
    this.#host = host
    this.#options = options
    this.#now = options.now ?? Date.now
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
        host.log('info', 'released the memory left by loading PingSources', {
          records: release.records,
          pauseMs: Math.round(release.pauseMs),
          rssMb: { before: Math.round(release.rssBefore / 2 ** 20), after: Math.round(release.rssAfter / 2 ** 20) }
        })
    })
    this.#owners = new PreviousOwners({
      brokers: host.brokers,
      ...(host.prefix === undefined ? {} : { prefix: host.prefix }),
      dispatcherId: host.dispatcherId,
      incarnation: host.incarnation,
      livenessTimeoutMs: host.livenessTimeoutMs,
      log: host.log,
      onChange: () => this.#schedule(),
      onOwed: (key, now) => this.#onOwed(key, now.answered, now.fire)
    })
    host.services.resources.subscribe('PingSource', ({ key, offset, object }) => {
      if (object === undefined) this.#resources.delete(key)
      else if (isPingSource(object)) {
        const recordOptions = { serviceUrlTemplate: host.serviceUrlTemplate, strings: this.#strings }
        this.#resources.set(key, pingRecordOf(object, Number(offset), recordOptions))
        this.#memory.load(1)
      }
      if (this.#wanted.has(key)) this.#schedule()
    })
  }

  start(): Promise<void> {
    return this.#owners.start()
  }

  /**
   * Runs what the contract (read through `contractOffset`) says, or nothing while the dispatcher is fenced.
   * A schedule that left it stops here and now, so the first heartbeat that reflects this contract names its
   * release: its next owner waits for that.
   */
  apply({ contract: wanted, running, contractOffset, ended }: PlaneContract): void {
    if (this.#closed) return
    const now = this.#now()
    const gone = endedHoldings(this.#wanted, wanted, ended)
    for (const { key, heldSince } of gone) this.#release(key, heldSince, now)
    if (gone.length > 0) this.#host.heartbeatSoon()
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
    const waiting = new Set<string>()
    for (const key of this.#wanted.keys()) {
      const running = this.#sources.get(key)
      if (running === undefined) pending.push(key)
      else if (running.held !== undefined) waiting.add(key)
    }
    return heartbeatWatermark(this.#table, this.#ledger, pending, this.#contractOffset, this.#now(), waiting)
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
    this.#owners.stopWaiting()
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
    await this.#owners.close()
  }

  #release(key: string, heldSince: bigint, now: number): void {
    this.#owners.forget(key)
    releaseSchedule(this.#table, this.#ledger, key, heldSince, now, this.#inFlightOf.get(key) ?? [])
    this.#sources.delete(key)
  }

  /**
   * Ticks a previous owner of `key` owed when this dispatcher started it: those it answered are done; those it
   * gave up, or did not live to answer, are fired here (late, same ids).
   */
  #onOwed(key: string, answered: readonly number[], fire: readonly number[]): void {
    for (const at of [...answered, ...fire]) this.#ledger.end(key, at)
    if (fire.length > 0 && this.#running && this.#table.has(key)) {
      this.#host.log('info', 'firing ticks a previous owner did not deliver', { source: key, ticks: fire.length })
      this.#fire({ ticks: fire.map(at => ({ key, at, late: true })), truncated: [] })
    }
    this.#host.heartbeatSoon()
  }

  #schedule(): void {
    this.#applying = this.#applying
      .then(() => this.#reconcile())
      .catch(error => this.#host.log('error', 'applying the contract failed', { error: String(error) }))
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
      else if (running.version !== placement.resourceVersion) this.#restart(key, record, placement, running, now)
    }
    if (fresh.length > 0) {
      await this.#owners.catchUp(fresh.map(([key]) => key))
      if (!this.#running) return this.#pause()
      const at = this.#now()
      let started = 0
      for (const [key, record, version] of fresh) {
        const placement = this.#wanted.get(key)
        if (placement === undefined || this.#sources.has(key)) continue
        const since = this.#owners.sinceFor(key, placement, this.#ledger.releasesOf(key), record.creationMs, at)
        if (since === undefined) continue
        this.#start(key, record, version, since.at, at)
        if (since.owed !== undefined && this.#table.has(key)) {
          // Held open here while their holder delivers them: this dispatcher's watermark stays below them.
          for (const tick of since.owed.ticks) this.#ledger.begin(key, tick)
          this.#owners.watch(key, since.owed)
        }
        started++
      }
      this.#memory.load(started)
      this.#owners.armTimer(at)
    }
    if (this.#paused) this.#resume()
    this.#timer.start()
    this.#timer.rearm()
  }

  /**
   * A new version of a schedule it runs: nothing was missed, it goes on from where the table is — unless its
   * sink did not resolve, then from the tick it held, fired again now that it may go somewhere.
   */
  #restart(key: string, record: PingRecord, placement: ContractRecord, running: Running, now: number): void {
    const through = this.#table.firedThrough(key) ?? now
    if (running.held === undefined) return this.#start(key, record, placement.resourceVersion, through, now)
    // From the tick it held, not from the ledger's oldest: ticks of an older version may still be in flight (they
    // end themselves), and firing from below them would deliver them twice.
    this.#ledger.end(key, running.held)
    this.#start(key, record, placement.resourceVersion, running.held - 1, now)
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
      builder: new PingEventBuilder(record),
      held: undefined
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

  #targetOf(key: string, record: PingRecord): PingTarget {
    if ('unresolved' in record.sink) {
      this.#warnOnce(
        `${key}@${record.offset}:sink`,
        `${key}: spec.sink does not resolve, its ticks wait until it does: ${record.sink.unresolved}`
      )
      return { kind: 'unresolved', message: record.sink.unresolved }
    }
    return { kind: 'resolved', target: pingTargetOf(key, record.sink) }
  }

  // Ticks are opened in the ledger at once (the table's `through` has passed them) and handed to the Deliverer
  // in slices across event-loop turns, so the first requests of a burst leave at once.
  #fire(firing: Firing): void {
    for (const key of firing.truncated) {
      this.#host.log('warn', 'missed ticks beyond the late-tick limit were skipped', { source: key })
    }
    for (const tick of firing.ticks) {
      // A version whose sink does not resolve holds only its first tick open: enough to hold its watermark. Its
      // own, even while an older version's ticks are in flight: when they end, the watermark stays below it.
      const running = this.#sources.get(tick.key)
      if (running?.target.kind === 'unresolved') {
        if (running.held !== undefined) continue
        running.held = tick.at
      }
      this.#ledger.begin(tick.key, tick.at)
    }
    this.#feeder.push(firing.ticks)
  }

  #deliver(tick: Tick): void {
    const source = this.#sources.get(tick.key)
    // Moved away meanwhile: the tick stays open, its release is below it (its next owner fires it).
    if (source === undefined) return
    if (source.target.kind === 'unresolved') {
      // Not handled: the tick stays open (fired again when the sink resolves), and the status says why.
      this.#host.services.errors.note(tick.key, `the sink cannot be resolved: spec.sink: ${source.target.message}`)
      return
    }
    const event = source.builder.event(tick.at, tick.late)
    this.#inFlight++
    const sent = this.#inFlightOf.get(tick.key)
    if (sent === undefined) this.#inFlightOf.set(tick.key, [tick.at])
    else sent.push(tick.at)
    const generation = this.#ledger.generation(tick.key)
    void this.#host.services.deliverer.deliver(event, source.target.target, this.#abort.signal).then(outcome => {
      // An aborted tick stays open: the watermark stays below it, so it is fired again. A tick whose open entry
      // was forgotten since (fired again) is the new copy's to end.
      if (outcome.kind !== 'aborted' && this.#ledger.generation(tick.key) === generation) {
        this.#ledger.end(tick.key, tick.at)
        if (outcome.kind === 'dropped') {
          this.#host.log('warn', 'a tick was dropped', {
            source: tick.key,
            tick: event.attributes.time,
            reason: outcome.reason
          })
        }
      }
      const out = this.#inFlightOf.get(tick.key)
      const i = out?.indexOf(tick.at) ?? -1
      if (i >= 0) out!.splice(i, 1)
      if (out?.length === 0) this.#inFlightOf.delete(tick.key)
      // A tick its release owes: answered, owed no more; aborted, its next owner fires it.
      if (this.#ledger.settleOwed(tick.key, tick.at, outcome.kind !== 'aborted')) this.#host.heartbeatSoon()
      if (--this.#inFlight === 0) {
        for (const resolve of this.#drained.splice(0)) resolve()
        this.#host.heartbeatSoon()
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
    for (const running of this.#sources.values()) running.held = undefined
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
    this.#host.log('warn', message)
  }
}
