import { Producer } from '@platformatic/kafka'
import { DispatcherKind } from '../api/index.ts'
import { Autoscaler, isPaused } from '../autoscale/index.ts'
import type { AutoscaleStatus, AutoscaleTarget } from '../autoscale/index.ts'
import type { MemberStatus } from '../dispatcher/index.ts'
import { ErrorCodes, ShoalError } from '../errors/index.ts'
import { MAX_POOL_SIZE, decidePool, stabilize } from '../pool/index.ts'
import type { PoolBounds, PoolDecision, PoolMember, Slots } from '../pool/index.ts'
import { LogTailer, clusterKey, kafkaErrorMessage, topicPartitions } from '../kafka/index.ts'
import type { KafkaClientSecurity, KafkaConnection } from '../kafka/index.ts'
import { Scheduler } from '../scheduler/index.ts'
import { secretsReferenced, sourceNet, unresolvedMessage } from '../secrets/index.ts'
import type { NetResolution, SecretKey, SourceNet } from '../secrets/index.ts'
import type { DispatcherInfo, RebalanceProposal, SchedulerConfig, VPod } from '../scheduler/index.ts'
import {
  appendInTransaction,
  contractKey,
  contractPartitionOf,
  decodeValue,
  isDispatcher,
  isFencing,
  isKafkaSource,
  ordinalOf
} from '../store/index.ts'
import type {
  ContractRecord,
  MovedFrom,
  PlacementsRecord,
  ResourceStore,
  ScaleRecord,
  SlotKind,
  StoredEntry,
  StoredKafkaSource
} from '../store/index.ts'

/** Where the leader learns which dispatchers are alive. */
export interface MembersSource {
  /** Dispatchers nobody may consider dead yet. */
  liveDispatchers(): readonly MemberStatus[]
  /** The highest incarnation of `id` ever seen, live or not. */
  highestIncarnation?(id: string): number | undefined
  on(event: 'change', listener: () => void): unknown
  off(event: 'change', listener: () => void): unknown
}

export interface SchedulerLeaderOptions {
  readonly connection: KafkaConnection
  readonly store: ResourceStore
  readonly members: MembersSource
  readonly config: SchedulerConfig
  /** Wait this long after a change before a pass, so a burst of changes makes one pass. */
  readonly debounceMs?: number
  /** Told how long each scheduling pass took, in seconds (the controller's metrics). */
  readonly onPass?: (seconds: number) => void
  readonly log: (level: 'info' | 'warn' | 'error', message: string, fields?: Record<string, unknown>) => void
  /** The dispatcher pool this leader sizes (docs/pool.md); absent: the pool is decided on but not managed. */
  readonly pool?: PoolOptions
  /** Opens the Secrets of sources' `spec.net`, for the clients that read their clusters (lag, partition counts). */
  readonly secretKey?: SecretKey
  /** Told when this term finds itself fenced (the SchedulerLeader then looks again whether it leads). */
  readonly onDeposed?: () => void
}

/**
 * After its term was fenced, a replica that still owns bucket 0 takes the leadership again this long after —
 * long enough for its group membership to hear of a newer generation (heartbeats every second), if there is one.
 */
const RETAKE_AFTER_MS = 2_000

/** `--dispatchers MIN..MAX` and what to do with each decision. */
export interface PoolOptions {
  readonly bounds: PoolBounds
  /** The slots of a dispatcher the pool starts; absent: the largest live dispatcher's. */
  readonly capacity?: Slots
  /** Steps down wait until the smaller size held this long (default 30 s). */
  readonly stabilizationMs?: number
  /** Told every decision, about once a second and after every pass (the StatefulSet writer). */
  readonly onDecision?: (decision: PoolDecision) => void
}

/** The pool as `GET /shoal/v1/pool` shows it: the decision, whether a supervisor acts on it, and the members. */
export type PoolView = PoolDecision & {
  readonly managed: boolean
  readonly members: ReadonlyArray<PoolMember & { readonly draining: boolean }>
}

export const DEFAULT_POOL_STABILIZATION_MS = 30_000

type Log = SchedulerLeaderOptions['log']

/**
 * Runs the scheduler on the replica that owns bucket 0 (DESIGN §4, §5). Each leadership is a term: it
 * opens the transactional id `<prefix>-scheduler` (fencing a deposed leader), rebuilds its state from the
 * placements and contracts in the log — no re-placing from scratch — and from then on writes placements and
 * contracts together, one transaction per pass, stamped with an epoch one above the highest in the log.
 */
export class SchedulerLeader {
  readonly #options: SchedulerLeaderOptions
  #term: LeaderTerm | undefined
  #starting: Promise<void> | undefined
  #stopped = false
  readonly #onAssignment = () => this.#followDetached()

  constructor(options: SchedulerLeaderOptions) {
    this.#options = options
  }

  start(): void {
    this.#options.store.onAssignment(this.#onAssignment)
    this.#followDetached()
  }

  /** Follows from a callback: a failed stop of the old term is logged, not an unhandled rejection. */
  #followDetached(): void {
    this.#follow().catch(error =>
      this.#options.log('error', 'following the scheduler leadership failed', { error: String(error) })
    )
  }

  async stop(): Promise<void> {
    this.#stopped = true
    this.#options.store.offAssignment(this.#onAssignment)
    await this.#starting?.catch(() => undefined)
    await this.#term?.stop()
    this.#term = undefined
  }

  /** The current term, if this replica leads. */
  get term(): LeaderTerm | undefined {
    return this.#term
  }

  async #follow(): Promise<void> {
    await this.#starting?.catch(() => undefined)
    if (this.#stopped) return
    const leading = this.#options.store.isLeader
    if (leading && (!this.#term || this.#term.deposed)) {
      await this.#term?.stop()
      // A term can be fenced after the assignment that kept it (a replica paused past its session, given bucket 0
      // back on waking, finds on its first append that the owner of the generation it missed took the id): it
      // looks again then, or it would lead with no term until the next rebalance.
      const term = new LeaderTerm({
        ...this.#options,
        onDeposed: () => setTimeout(() => this.#followDetached(), RETAKE_AFTER_MS).unref()
      })
      this.#term = term
      this.#starting = term.start().catch(error => {
        this.#options.log('error', 'could not take the scheduler leadership', { error: String(error) })
        if (this.#term === term) this.#term = undefined
      })
      await this.#starting
    } else if (!leading && this.#term) {
      const term = this.#term
      this.#term = undefined
      await term.stop()
    }
  }
}

/** One leadership: from taking the transactional id until it is lost or fenced. */
export class LeaderTerm {
  readonly #options: SchedulerLeaderOptions
  readonly #log: Log
  readonly #producer: Producer
  readonly #tailer: LogTailer
  readonly #scheduler: Scheduler
  /** What the log says now: the placements record per source and the contract record per (dispatcher, source). */
  readonly #placements = new Map<string, PlacementsRecord>()
  readonly #contracts = new Map<string, ContractRecord>()
  readonly #dirty = new Set<string>()
  /** Partition counts by clusterKey (brokers and credentials) and topic. */
  readonly #partitionCounts = new Map<string, number>()
  readonly #net: SourceNet
  #epoch = 0
  /** The autoscalers of this term: they start from the scales the log recorded. */
  #autoscaler: Autoscaler | undefined
  /** The vreplicas each source was last given to the scheduler, and by whom. */
  readonly #scales = new Map<string, ScaleRecord>()
  /** The last proposal shown: the only one an approval may apply. */
  #proposal: RebalanceProposal | undefined
  #timer: NodeJS.Timeout | undefined
  /** Dispatchers the pool is emptying (state `draining` for the scheduler), and its recent sizes. */
  #draining: ReadonlySet<string> = new Set()
  #poolRecent: ReadonlyArray<{ readonly atMs: number; readonly desired: number }> = []
  #poolTimer: NodeJS.Timeout | undefined
  #running: Promise<void> = Promise.resolve()
  #stopped = false
  deposed = false
  readonly #unsubscribe: Array<() => void> = []

  constructor(options: SchedulerLeaderOptions) {
    this.#options = options
    this.#log = options.log
    this.#net = sourceNet(options.store, options.secretKey)
    const names = options.store.names
    this.#producer = new Producer({
      clientId: `${options.connection.clientId}-scheduler`,
      bootstrapBrokers: [...options.connection.brokers],
      transactionalId: names.schedulerTransactionalId,
      idempotent: true,
      acks: -1,
      retries: 5,
      retryDelay: 200
    })
    this.#tailer = new LogTailer({
      connection: { ...options.connection, clientId: `${options.connection.clientId}-scheduler-log` },
      topics: [names.placementsTopic, names.contractsTopic],
      onRecord: record => {
        const key = record.key?.toString('utf8')
        if (key === undefined) return
        const decoded = decodeValue(record.value, record.headers)
        const map = record.topic === names.placementsTopic ? this.#placements : this.#contracts
        if (decoded.kind === 'tombstone') map.delete(key)
        else if (decoded.kind === 'value') {
          const value = decoded.value as PlacementsRecord & ContractRecord
          // A contract as the leader keeps it names the offset that gave its dispatcher the source.
          map.set(
            key,
            map === this.#contracts ? { ...value, heldSince: value.heldSince ?? String(record.offset) } : value
          )
          this.#epoch = Math.max(this.#epoch, value.epoch)
        }
      }
    })
    this.#scheduler = new Scheduler({ config: options.config })
  }

  get epoch(): number {
    return this.#epoch
  }

  async start(): Promise<void> {
    // Fence a deposed leader first: after this no older leader can append, so the log read next is final.
    const tx = await this.#producer.beginTransaction({ producerId: -1n, producerEpoch: -1 })
    await tx.cancel()
    await this.#tailer.start()
    await this.#tailer.barrier([
      { topic: this.#options.store.names.placementsTopic },
      { topic: this.#options.store.names.contractsTopic }
    ])
    this.#epoch += 1
    const store = this.#options.store
    this.#autoscaler = new Autoscaler({
      targets: () =>
        store
          .snapshot(k => k.startsWith('KafkaSource/'))
          .filter(isKafkaSource)
          .map(e => this.#autoscaleTarget(e)),
      recordedScale: key => {
        const p = this.#placements.get(key)
        return p && p.placements.reduce((n, x) => n + x.vreplicas, p.pending)
      },
      onScale: key => {
        this.#dirty.add(key)
        this.#schedulePass()
      },
      log: this.#log
    })
    // The sources first, then the placements the log holds for them: kept, not re-placed from scratch.
    const sources = store.snapshot(isSourceKey)
    await this.#prefetchPartitions(sources)
    for (const entry of sources) this.#scheduler.upsertVPod(await this.#vpodOf(entry))
    const revision = Math.max(0, ...[...this.#placements.values()].map(p => p.revision))
    this.#scheduler.restore(
      [...this.#placements].map(([key, p]) => ({
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
    for (const key of this.#placements.keys()) if (!store.peek(key)) this.#dirty.add(key)
    this.#log('info', 'scheduler leadership taken', { epoch: this.#epoch, placements: this.#placements.size })
    this.#schedulePass(0)
    this.#autoscaler.start()
    // The stabilisation window ends by itself, and heartbeats say when a drained contract has been applied.
    this.#poolTimer = setInterval(() => this.#refreshPool(), 1_000)
    this.#poolTimer.unref()
  }

  async stop(): Promise<void> {
    this.#stopped = true
    clearTimeout(this.#timer)
    clearInterval(this.#poolTimer)
    for (const unsubscribe of this.#unsubscribe) unsubscribe()
    await this.#autoscaler?.stop()
    await this.#running.catch(() => undefined)
    await this.#producer.close(true).catch(() => undefined)
    await this.#tailer.close()
  }

  /** Every autoscaled source: its scale, lag and why (`GET /shoal/v1/autoscaling`). */
  autoscaling(): AutoscaleStatus[] {
    return this.#autoscaler?.status() ?? []
  }

  /** The pool's size as the load needs it, and why (`GET /shoal/v1/pool`). */
  pool(): PoolView {
    const members = this.#poolMembers()
    const decision = this.#decidePool(members, performance.now(), false)
    const draining = new Set(decision.draining)
    return {
      ...decision,
      managed: this.#options.pool !== undefined,
      members: members.map(m => ({ ...m, draining: draining.has(m.id) }))
    }
  }

  #poolMembers(): PoolMember[] {
    const cordoned = this.#cordoned()
    return this.#options.members
      .liveDispatchers()
      .map(m => {
        const placed = this.#scheduler.used(m.id) ?? { consumer: 0, schedule: 0 }
        return {
          id: m.id,
          ordinal: Number.isFinite(m.ordinal) ? m.ordinal : ordinalOf(m.id),
          capacity: { consumer: m.capacity.consumers, schedule: m.capacity.schedules },
          placed: { consumer: placed.consumer, schedule: placed.schedule },
          running: { consumer: m.used.consumers, schedule: m.used.schedules },
          cordoned: cordoned.has(m.id)
        }
      })
      .sort((a, b) => a.ordinal - b.ordinal)
  }

  /** The pure decision over this term's state; `remember` moves the stabilisation window on. */
  #decidePool(members: readonly PoolMember[], nowMs: number, remember: boolean): PoolDecision {
    const pool = this.#options.pool
    const summary = this.#scheduler.summary()
    const input = {
      bounds: pool?.bounds ?? { min: 0, max: MAX_POOL_SIZE },
      members,
      pendingForCapacity: summary.pendingForCapacity,
      pendingUnschedulable: summary.pendingUnschedulable,
      ...(pool?.capacity === undefined ? {} : { capacity: pool.capacity })
    }
    const raw = decidePool(input)
    const window = stabilize(
      this.#poolRecent,
      raw.desired,
      nowMs,
      pool?.stabilizationMs ?? DEFAULT_POOL_STABILIZATION_MS
    )
    if (remember) this.#poolRecent = window.recent
    return window.desired > raw.desired ? decidePool({ ...input, atLeast: window.desired }) : raw
  }

  /** Decides the pool; a managed pool drains what the decision says, and its writer is told. */
  #refreshPool(): void {
    const pool = this.#options.pool
    if (this.#stopped || pool === undefined) return
    const decision = this.#decidePool(this.#poolMembers(), performance.now(), true)
    const draining = new Set(decision.draining)
    if (draining.size !== this.#draining.size || [...draining].some(id => !this.#draining.has(id))) {
      this.#log('info', 'the pool drains dispatchers', { draining: [...draining], reason: decision.message })
      this.#draining = draining
      this.#dispatchersChanged()
    }
    try {
      pool.onDecision?.(decision)
    } catch (error) {
      this.#log('warn', 'the pool decision could not be acted on', { error: String(error) })
    }
  }

  /** The scheduler's rebalance proposal, from the current state (after any pass that is due). */
  propose(): Promise<RebalanceProposal> {
    return this.#serially(async () => {
      await this.#pass()
      this.#proposal = this.#scheduler.proposeRebalance()
      return this.#proposal
    })
  }

  /**
   * Applies the proposal served at `revision`, exactly as it was shown; refuses it when the scheduler has
   * moved on since — placements changed, or the pool did, so that the proposal now would be another one.
   * Resolves when its moves are in the log.
   */
  approve(revision: number): Promise<{ moved: number; revision: number; score: number }> {
    return this.#serially(async () => {
      await this.#pass()
      const now = this.#scheduler.proposeRebalance()
      const shown = this.#proposal
      if (now.revision !== revision || !shown || shown.revision !== revision || !sameMoves(shown, now)) {
        throw new ShoalError(
          ErrorCodes.CONFLICT,
          `the proposal of revision ${revision} is stale: placements or the pool changed since (the scheduler is at revision ${now.revision}); look at the new proposal and approve that`
        )
      }
      const result = this.#scheduler.applyRebalance(shown)
      this.#proposal = undefined
      await this.#write(result.changes.map(c => c.key))
      return { moved: shown.moves.length, revision: this.#scheduler.revision, score: this.#scheduler.balancedness() }
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
      // New credentials, or a Secret now found: the sources that refer to it look up their partition counts again.
      const [, namespace, name] = key.split('/')
      for (const entry of this.#options.store.snapshot(k => k.startsWith(`KafkaSource/${namespace}/`))) {
        if (!isKafkaSource(entry) || !secretsReferenced(entry.object.spec.net).includes(name ?? '')) continue
        this.#dirty.add(entry.key)
        this.#schedulePass()
      }
    }
  }

  #cordoned(): Set<string> {
    return new Set(
      this.#options.store
        .snapshot(k => k.startsWith(`${DispatcherKind.kind}/`))
        .filter(e => isDispatcher(e) && e.object.spec.unschedulable)
        .map(e => e.object.metadata.name)
    )
  }

  #dispatchersChanged(): void {
    const cordoned = this.#cordoned()
    const dispatchers: DispatcherInfo[] = this.#options.members.liveDispatchers().map(m => ({
      id: m.id,
      ordinal: Number.isFinite(m.ordinal) ? m.ordinal : ordinalOf(m.id),
      zone: m.zone,
      node: m.node,
      capacity: { consumer: m.capacity.consumers, schedule: m.capacity.schedules },
      state: cordoned.has(m.id) ? 'cordoned' : this.#draining.has(m.id) ? 'draining' : 'ready'
    }))
    this.#scheduler.setDispatchers(dispatchers)
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
    this.#refreshPool()
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
    const scale = this.#scaleOf(entry)
    this.#scales.set(entry.key, scale)
    if (!isKafkaSource(entry)) return { key: entry.key, slot: 'schedule', vreplicas: scale.desired }
    const { spec } = entry.object
    const net = this.#net(entry)
    const max =
      net.kind === 'resolved' ? await this.#partitionsOf(spec.bootstrapServers, spec.topics, net.security) : undefined
    return {
      key: entry.key,
      slot: 'consumer',
      vreplicas: scale.desired,
      ...(max === undefined ? {} : { maxVReplicas: max })
    }
  }

  /** A KafkaSource as the autoscaler reads it, with its resolved `spec.net` (or why it cannot be resolved). */
  #autoscaleTarget(entry: StoredEntry<StoredKafkaSource>): AutoscaleTarget {
    return autoscaleTarget(entry, this.#net(entry))
  }

  /** A paused source gets none; an autoscaled one what its autoscaler says; any other its spec's count. */
  #scaleOf(entry: StoredEntry): ScaleRecord {
    if (isPaused(entry.object.metadata)) return { desired: 0, by: 'paused' }
    if (!isKafkaSource(entry)) return { desired: 1, by: 'spec' }
    const autoscaled = this.#autoscaler?.scaleOf(this.#autoscaleTarget(entry))
    if (autoscaled === undefined) return { desired: entry.object.spec.consumers, by: 'spec' }
    const held = this.#autoscaler?.heldBecause(entry.key)
    return { desired: autoscaled, by: 'autoscaler', ...(held === undefined ? {} : { held }) }
  }

  /**
   * Reads the partition counts of every source's topics with one metadata request per Kafka cluster, so a new
   * leader with many sources does not open a client per source before its first pass.
   */
  async #prefetchPartitions(entries: readonly StoredEntry[]): Promise<void> {
    const byCluster = new Map<
      string,
      { brokers: readonly string[]; security: KafkaClientSecurity | undefined; topics: Set<string> }
    >()
    for (const entry of entries) {
      if (!isKafkaSource(entry)) continue
      const net = this.#net(entry)
      if (net.kind === 'unresolved') continue
      const brokers = entry.object.spec.bootstrapServers
      const key = clusterKey(brokers, net.security)
      const cluster = byCluster.get(key) ?? { brokers, security: net.security, topics: new Set<string>() }
      for (const topic of entry.object.spec.topics) cluster.topics.add(topic)
      byCluster.set(key, cluster)
    }
    await Promise.all([...byCluster.values()].map(c => this.#partitionsOf(c.brokers, [...c.topics], c.security)))
  }

  /**
   * The total partition count of a source's topics (NoMaxResourceCount), read with the source's credentials and
   * cached per cluster and credentials; unknown when unreachable.
   */
  async #partitionsOf(
    brokers: readonly string[],
    topics: readonly string[],
    security: KafkaClientSecurity | undefined
  ): Promise<number | undefined> {
    const cluster = clusterKey(brokers, security)
    const missing = topics.filter(t => !this.#partitionCounts.has(`${cluster}|${t}`))
    if (missing.length > 0) {
      try {
        const counts = await topicPartitions(
          { brokers, clientId: `${this.#options.connection.clientId}-topics` },
          missing,
          security
        )
        for (const [topic, count] of counts) this.#partitionCounts.set(`${cluster}|${topic}`, count)
      } catch (error) {
        this.#log('warn', 'could not read the partition counts of a source’s topics', {
          topics,
          error: kafkaErrorMessage(error)
        })
      }
    }
    let total = 0
    for (const topic of topics) {
      const count = this.#partitionCounts.get(`${cluster}|${topic}`)
      if (count === undefined) return undefined
      total += count
    }
    return total
  }

  /** Writes the placements and contracts of the given sources, as the scheduler now has them, in one transaction. */
  async #write(keys: Iterable<string>): Promise<void> {
    const store = this.#options.store
    const names = store.names
    const revision = this.#scheduler.revision
    const now = new Date().toISOString()
    const messages: Array<{ topic: string; partition: number; key: string; value: unknown }> = []
    const nextPlacements = new Map<string, PlacementsRecord | null>()
    const nextContracts = new Map<string, ContractRecord | null>()
    for (const key of keys) {
      const entry = store.peek(key)
      const before = this.#placements.get(key)
      const oldContracts = new Map((before?.placements ?? []).map(p => [p.podName, p.vreplicas]))
      if (!entry) {
        if (before) {
          messages.push({ topic: names.placementsTopic, partition: store.bucketOf(key), key, value: null })
          nextPlacements.set(key, null)
        }
        for (const dispatcher of oldContracts.keys()) this.#tombstoneContract(messages, nextContracts, dispatcher, key)
        continue
      }
      const slot: SlotKind = entry.object.kind === 'KafkaSource' ? 'consumer' : 'schedule'
      const placements = this.#scheduler.placements(key) ?? []
      const pending = this.#scheduler.pending(key)
      // A schedule that changes hands names the dispatchers it leaves: its new owner goes on from their watermarks.
      // One left with nowhere to go (pending) keeps them in its placements record for the owner it gets later.
      const left = [...oldContracts.keys()].filter(d => !placements.some(p => p.podName === d))
      const chain =
        slot !== 'schedule'
          ? []
          : left.length > 0
            ? movedChain(
                left.map(d => this.#leaving(d, key, now)),
                d => this.#contracts.get(contractKey(d, key))?.movedFrom
              )
            : oldContracts.size === 0
              ? (before?.left ?? [])
              : []
      const record: PlacementsRecord = {
        source: key,
        slot,
        placements: placements.map(p => ({ podName: p.podName, vreplicas: p.vreplicas })),
        pending: pending?.count ?? 0,
        ...(pending && pending.count > 0 ? { reason: pending.reason, message: pending.message } : {}),
        epoch: this.#epoch,
        revision,
        since: before && before.pending > 0 === (pending?.count ?? 0) > 0 ? before.since : now,
        ...(this.#scales.has(key) ? { scale: this.#scales.get(key)! } : {}),
        ...(placements.length === 0 && chain.length > 0 ? { left: chain } : {})
      }
      if (!before || !samePlacements(before, record) || (record.left !== undefined) !== (before.left !== undefined)) {
        messages.push({ topic: names.placementsTopic, partition: store.bucketOf(key), key, value: record })
        nextPlacements.set(key, record)
      }
      for (const p of placements) {
        const current = this.#contracts.get(contractKey(p.podName, key))
        if (current?.vreplicas === p.vreplicas && current.resourceVersion === entry.resourceVersion) continue
        // A new holder gets the chain; a holder's own contract rewritten (a new resourceVersion) keeps it.
        const movedFrom = slot !== 'schedule' ? undefined : !oldContracts.has(p.podName) ? chain : current?.movedFrom
        const contract: ContractRecord = {
          dispatcher: p.podName,
          source: key,
          slot,
          vreplicas: p.vreplicas,
          resourceVersion: entry.resourceVersion,
          epoch: this.#epoch,
          ...(movedFrom && movedFrom.length > 0 ? { movedFrom } : {}),
          ...(current?.heldSince === undefined ? {} : { heldSince: current.heldSince })
        }
        messages.push({
          topic: names.contractsTopic,
          partition: contractPartitionOf(p.podName, store.buckets),
          key: contractKey(p.podName, key),
          value: contract
        })
        nextContracts.set(contractKey(p.podName, key), contract)
      }
      for (const dispatcher of oldContracts.keys()) {
        if (!placements.some(p => p.podName === dispatcher))
          this.#tombstoneContract(messages, nextContracts, dispatcher, key)
      }
    }
    if (messages.length === 0) return
    const offsets = await appendInTransaction(this.#producer, messages)
    messages.forEach((message, i) => {
      const written = message.topic === names.contractsTopic ? nextContracts.get(message.key) : undefined
      if (written && written.heldSince === undefined) {
        nextContracts.set(message.key, { ...written, heldSince: String(offsets[i]) })
      }
    })
    applyTo(this.#placements, nextPlacements)
    applyTo(this.#contracts, nextContracts)
  }

  // A dispatcher a schedule leaves now: the offset that had given it the schedule and its incarnation, so its
  // next owner knows which of its heartbeats speak for the schedule.
  #leaving(dispatcher: string, key: string, now: string): MovedFrom {
    const heldSince = this.#contracts.get(contractKey(dispatcher, key))?.heldSince
    const incarnation = this.#options.members.highestIncarnation?.(dispatcher)
    return {
      dispatcher,
      at: now,
      ...(heldSince === undefined ? {} : { offset: heldSince }),
      ...(incarnation === undefined ? {} : { incarnation })
    }
  }

  #tombstoneContract(
    messages: Array<{ topic: string; partition: number; key: string; value: unknown }>,
    next: Map<string, ContractRecord | null>,
    dispatcher: string,
    source: string
  ): void {
    const key = contractKey(dispatcher, source)
    messages.push({
      topic: this.#options.store.names.contractsTopic,
      partition: contractPartitionOf(dispatcher, this.#options.store.buckets),
      key,
      value: null
    })
    next.set(key, null)
  }

  #onFailure(error: unknown): void {
    if (isFencing(error)) {
      this.deposed = true
      this.#stopped = true
      this.#log('warn', 'the scheduler leadership was taken by another replica; this one stops writing', {})
      this.#options.onDeposed?.()
      return
    }
    this.#log('error', 'a scheduling pass failed; retrying', { error: String(error) })
    // Retry the whole picture: what failed to be written is recomputed from the scheduler's state.
    for (const key of this.#options.store.snapshot(isSourceKey)) this.#dirty.add(key.key)
    for (const key of this.#placements.keys()) this.#dirty.add(key)
    this.#schedulePass(1_000)
  }
}

/** At most this many dispatchers a schedule left are carried in its contract. */
const MOVED_CHAIN = 8

/**
 * The dispatchers a schedule leaves now (`left`), then those each of them had got it from: a dispatcher that
 * never started the schedule knows nothing of it, so its predecessors must travel on. Newest first, one entry
 * per holding (dispatcher and the offset that gave it the schedule).
 */
export function movedChain(
  left: readonly MovedFrom[],
  previous: (dispatcher: string) => readonly MovedFrom[] | undefined
): MovedFrom[] {
  const chain: MovedFrom[] = [...left]
  for (const { dispatcher } of left) {
    for (const earlier of previous(dispatcher) ?? []) {
      // Once per holding: a dispatcher that had it twice (it came back) is named for each, as its heartbeats
      // from the first holding speak for the schedule even when it never stopped it in between.
      if (!chain.some(m => m.dispatcher === earlier.dispatcher && m.offset === earlier.offset)) chain.push(earlier)
    }
  }
  return chain.slice(0, MOVED_CHAIN)
}

/** Puts written records into a map of the log's state: null is a tombstone. */
function applyTo<V>(map: Map<string, V>, written: ReadonlyMap<string, V | null>): void {
  for (const [key, value] of written) {
    if (value === null) map.delete(key)
    else map.set(key, value)
  }
}

function autoscaleTarget(entry: StoredEntry<StoredKafkaSource>, net: NetResolution): AutoscaleTarget {
  const { spec } = entry.object
  return {
    key: entry.key,
    annotations: entry.object.metadata.annotations,
    paused: isPaused(entry.object.metadata),
    brokers: spec.bootstrapServers,
    ...(net.kind === 'unresolved'
      ? { netProblem: unresolvedMessage(net) }
      : net.security === undefined
        ? {}
        : { security: net.security }),
    groupId: spec.consumerGroup,
    topics: spec.topics,
    initialOffset: spec.initialOffset
  }
}

function isSourceKey(key: string): boolean {
  return key.startsWith('KafkaSource/') || key.startsWith('PingSource/')
}

function sameMoves(a: RebalanceProposal, b: RebalanceProposal): boolean {
  return JSON.stringify(a.moves) === JSON.stringify(b.moves)
}

function samePlacements(a: PlacementsRecord, b: PlacementsRecord): boolean {
  return (
    a.pending === b.pending &&
    a.scale?.desired === b.scale?.desired &&
    a.scale?.by === b.scale?.by &&
    a.scale?.held === b.scale?.held &&
    a.reason === b.reason &&
    a.placements.length === b.placements.length &&
    a.placements.every((p, i) => p.podName === b.placements[i]?.podName && p.vreplicas === b.placements[i]?.vreplicas)
  )
}
