import { DispatcherKind } from '../api/index.ts'
import { Autoscaler } from '../autoscale/index.ts'
import type { AutoscaleStatus } from '../autoscale/index.ts'
import { Scheduler } from '../scheduler/index.ts'
import type { RebalanceProposal, VPod } from '../scheduler/index.ts'
import { sourceNet, sourcesReferring } from '../secrets/index.ts'
import type { SourceNet } from '../secrets/index.ts'
import { contractKey, isFencing, isKafkaSource } from '../store/index.ts'
import type { ScaleRecord, StoredEntry } from '../store/index.ts'
import { cordonedIn, schedulerDispatchers } from './dispatcher-states.ts'
import { leaderWrites } from './leader-writes.ts'
import type { SchedulerLeaderOptions } from './options.ts'
import { PartitionCounts } from './partition-counts.ts'
import { PoolSizer } from './pool-sizer.ts'
import type { PoolView } from './pool-sizer.ts'
import { RebalanceApprovals } from './rebalance-approvals.ts'
import { autoscaleTarget, isSourceKey, scaleOf, vpodOf } from './source-scale.ts'
import { TermLog } from './term-log.ts'
import type { Log } from '../log/index.ts'

/**
 * One leadership: from taking the transactional id until it is lost or fenced. It rebuilds its state from the
 * placements and contracts in the log — no re-placing from scratch — and from then on runs a scheduling pass
 * after changes (debounced), writing placements and contracts together, one transaction per pass.
 */
export class LeaderTerm {
  readonly #options: SchedulerLeaderOptions
  readonly #log: Log
  readonly #termLog: TermLog
  readonly #scheduler: Scheduler
  readonly #dirty = new Set<string>()
  readonly #partitions: PartitionCounts
  readonly #pool: PoolSizer
  readonly #approvals = new RebalanceApprovals()
  readonly #net: SourceNet
  /** The autoscalers of this term: they start from the scales the log recorded. */
  #autoscaler: Autoscaler | undefined
  /** The vreplicas each source was last given to the scheduler, and by whom. */
  readonly #scales = new Map<string, ScaleRecord>()
  #timer: NodeJS.Timeout | undefined
  #running: Promise<void> = Promise.resolve()
  #stopped = false
  deposed = false
  readonly #unsubscribe: Array<() => void> = []

  constructor(options: SchedulerLeaderOptions) {
    this.#options = options
    this.#log = options.log
    this.#net = sourceNet(options.store, options.secretKey)
    // A later term's record in the log: taken over, as surely as a fenced append says (see #onFailure).
    this.#termLog = new TermLog(options.connection, options.store, epoch => {
      if (!this.deposed) this.#onFailure(new Error(`fenced: scheduler term ${epoch} wrote after this one`))
    })
    this.#scheduler = new Scheduler({ config: options.config })
    this.#partitions = new PartitionCounts(options.connection.clientId, options.log)
    this.#pool = new PoolSizer({
      pool: options.pool,
      members: options.members,
      store: options.store,
      scheduler: this.#scheduler,
      log: options.log,
      onDraining: () => this.#dispatchersChanged()
    })
  }

  get epoch(): number {
    return this.#termLog.epoch
  }

  async start(): Promise<void> {
    await this.#termLog.open()
    const store = this.#options.store
    this.#autoscaler = this.#newAutoscaler()
    // The sources first, then the placements the log holds for them: kept, not re-placed from scratch.
    const sources = store.snapshot(isSourceKey)
    await this.#partitions.prefetch(sources, this.#net)
    for (const entry of sources) this.#scheduler.upsertVPod(await this.#vpodOf(entry))
    const placements = this.#termLog.placements
    const revision = Math.max(0, ...[...placements.values()].map(p => p.revision))
    this.#scheduler.restore(
      [...placements].map(([key, p]) => ({
        key,
        slot: p.slot,
        placements: p.placements.map(x => ({ podName: x.podName, vreplicas: x.vreplicas }))
      })),
      { revision }
    )
    this.#unsubscribe.push(store.onResource(key => this.#changed(key)))
    const onMembers = () => this.#dispatchersChanged()
    this.#options.members.on('change', onMembers)
    this.#unsubscribe.push(() => this.#options.members.off('change', onMembers))
    this.#dispatchersChanged()
    for (const entry of store.snapshot(isSourceKey)) this.#dirty.add(entry.key)
    // Placements of sources that are gone.
    for (const key of placements.keys()) if (!store.peek(key)) this.#dirty.add(key)
    this.#log('info', 'scheduler leadership taken', { epoch: this.epoch, placements: placements.size })
    this.#schedulePass(0)
    this.#autoscaler.start()
    this.#pool.start()
  }

  async stop(): Promise<void> {
    this.#stopped = true
    clearTimeout(this.#timer)
    this.#pool.stop()
    for (const unsubscribe of this.#unsubscribe) unsubscribe()
    await this.#autoscaler?.stop()
    await this.#running.catch(() => undefined)
    await this.#termLog.close()
  }

  /**
   * Whether no dispatcher runs the source any more, as far as the log and their heartbeats tell: the log holds no
   * contract for it, and each dispatcher a contract was withdrawn from has applied its contract partition past the
   * withdrawal (`applied` gives a live dispatcher's applied offset, undefined for one that is not alive).
   */
  deliveryStopped(source: string, applied: (dispatcher: string) => bigint | undefined): boolean {
    for (const contract of this.#termLog.contracts.values()) if (contract.source === source) return false
    for (const [key, { dispatcher, offset }] of this.#termLog.withdrawn) {
      if (key !== contractKey(dispatcher, source)) continue
      const at = applied(dispatcher)
      if (at !== undefined && at < offset) return false
    }
    return true
  }

  /** Every autoscaled source: its scale, lag and why (`GET /shoal/v1/autoscaling`). */
  autoscaling(): AutoscaleStatus[] {
    return this.#autoscaler?.status() ?? []
  }

  /** The pool's size as the load needs it, and why (`GET /shoal/v1/pool`). */
  pool(): PoolView {
    return this.#pool.view()
  }

  /** The scheduler's rebalance proposal, from the current state (after any pass that is due). */
  propose(): Promise<RebalanceProposal> {
    return this.#serially(async () => {
      await this.#pass()
      return this.#approvals.propose(this.#scheduler)
    })
  }

  /**
   * Applies the proposal served at `revision`, exactly as it was shown (see RebalanceApprovals). Resolves when
   * its moves are in the log.
   */
  approve(revision: number): Promise<{ moved: number; revision: number; score: number }> {
    return this.#serially(async () => {
      await this.#pass()
      const { moved, changed } = this.#approvals.approve(this.#scheduler, revision)
      await this.#write(changed)
      return { moved, revision: this.#scheduler.revision, score: this.#scheduler.balancedness() }
    })
  }

  #newAutoscaler(): Autoscaler {
    const store = this.#options.store
    return new Autoscaler({
      targets: () =>
        store
          .snapshot(k => k.startsWith('KafkaSource/'))
          .filter(isKafkaSource)
          .map(e => autoscaleTarget(e, this.#net(e))),
      recordedScale: key => {
        const p = this.#termLog.placements.get(key)
        return p && p.placements.reduce((n, x) => n + x.vreplicas, p.pending)
      },
      onScale: key => {
        this.#dirty.add(key)
        this.#schedulePass()
      },
      log: this.#log
    })
  }

  /** Runs `work` after every pass and write before it, and before any after it. */
  #serially<T>(work: () => Promise<T>): Promise<T> {
    const run = this.#running.then(work)
    // The caller gets the error; the chain goes on (a fenced write still deposes this term).
    this.#running = run.then(
      () => undefined,
      error => {
        if (isFencing(error)) this.#onFailure(error)
      }
    )
    return run
  }

  #changed(key: string): void {
    if (key.startsWith(`${DispatcherKind.kind}/`)) this.#dispatchersChanged()
    else if (isSourceKey(key)) {
      this.#dirty.add(key)
      this.#schedulePass()
    } else if (key.startsWith('Secret/')) {
      for (const source of sourcesReferring(this.#options.store, key)) {
        this.#dirty.add(source)
        this.#schedulePass()
      }
    }
  }

  #dispatchersChanged(): void {
    const live = this.#options.members.liveDispatchers()
    this.#scheduler.setDispatchers(schedulerDispatchers(live, cordonedIn(this.#options.store), this.#pool.draining))
    this.#schedulePass()
  }

  #schedulePass(delay = this.#options.debounceMs ?? 50): void {
    if (this.#stopped || this.#timer) return
    this.#timer = setTimeout(() => {
      this.#timer = undefined
      this.#running = this.#running.then(() => this.#timedPass()).catch(error => this.#onFailure(error))
    }, delay)
  }

  async #timedPass(): Promise<void> {
    const started = performance.now()
    await this.#pass()
    this.#options.onPass?.((performance.now() - started) / 1000)
    this.#pool.refresh()
  }

  async #pass(): Promise<void> {
    if (this.#stopped) return
    const store = this.#options.store
    const keys = [...this.#dirty]
    this.#dirty.clear()
    // Sources upserted in this pass: their contracts are rewritten if their resourceVersion moved.
    const upserted = new Set<string>()
    for (const key of keys) {
      const entry = store.peek(key)
      if (!entry) {
        this.#scheduler.removeVPod(key)
        this.#scales.delete(key)
        continue
      }
      const vpod = await this.#vpodOf(entry)
      this.#scheduler.upsertVPod(vpod)
      upserted.add(key)
    }
    const result = this.#scheduler.schedule()
    const changed = new Set([...result.changes.map(c => c.key), ...upserted, ...keys.filter(k => !store.peek(k))])
    await this.#write(changed)
  }

  async #vpodOf(entry: StoredEntry): Promise<VPod> {
    const scale = scaleOf(entry, this.#autoscaler, this.#net)
    this.#scales.set(entry.key, scale)
    const max = isKafkaSource(entry) ? await this.#partitions.ofSource(entry, this.#net) : undefined
    return vpodOf(entry, scale, max)
  }

  /** Writes the placements and contracts of the given sources, as the scheduler now has them, in one transaction. */
  async #write(keys: Iterable<string>): Promise<void> {
    const store = this.#options.store
    const log = this.#termLog
    const writes = leaderWrites({
      keys,
      placements: log.placements,
      contracts: log.contracts,
      scales: this.#scales,
      epoch: log.epoch,
      revision: this.#scheduler.revision,
      now: new Date().toISOString(),
      entry: key => store.peek(key),
      placed: key => this.#scheduler.placements(key),
      pending: key => this.#scheduler.pending(key),
      incarnation: dispatcher => this.#options.members.highestIncarnation?.(dispatcher)
    })
    await log.append(writes)
  }

  #onFailure(error: unknown): void {
    if (isFencing(error)) {
      this.deposed = true
      this.#stopped = true
      this.#pool.stop()
      this.#log('warn', 'the scheduler leadership was taken by another replica; this one stops writing', {})
      this.#options.onDeposed?.()
      return
    }
    this.#log('error', 'a scheduling pass failed; retrying', { error: String(error) })
    // Retry the whole picture: what failed to be written is recomputed from the scheduler's state.
    for (const key of this.#options.store.snapshot(isSourceKey)) this.#dirty.add(key.key)
    for (const key of this.#termLog.placements.keys()) this.#dirty.add(key)
    this.#schedulePass(1_000)
  }
}
