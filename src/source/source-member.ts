import { ConnectionPool, Consumer } from '@platformatic/kafka'
import type { Broker, ClusterMetadata, fetchV17 } from '@platformatic/kafka'
import {
  GROUP_HEARTBEAT_INTERVAL_MS,
  GROUP_REBALANCE_TIMEOUT_MS,
  GROUP_SESSION_TIMEOUT_MS,
  IsolationLevels,
  fetchOrder,
  fetchResponseOf,
  kafkaSecurityOptions
} from '../kafka/index.ts'
import type { FetchLimits, KafkaClientSecurity } from '../kafka/index.ts'
import {
  COMMIT_INTERVAL_MS,
  DELIVER_ERROR_BACKOFF_MS,
  FETCH_MAX_BYTES,
  FETCH_MAX_WAIT_MS,
  FETCH_PARTITION_MAX_BYTES,
  HANDOVER_WAIT_MS,
  MAX_UNCOMMITTED_PER_PARTITION,
  RELEASE_COMMIT_MS,
  REVOKE_DRAIN_MS
} from './defaults.ts'
import { balancedCooperativeAssigner } from './assignor.ts'
import { drainingMark, drainingMember } from './handover.ts'
import type { CommittedOffset, OffsetCommitter } from './offset-committer.ts'
import { OffsetTracker } from './offset-tracker.ts'
import type { CommitRefusal, TrackedOffset } from './offset-tracker.ts'
import { decodeFetchedBatches } from './record-batches.ts'
import type {
  Deliver,
  HandoverResult,
  ConsumerSpec,
  Outcome,
  SourceLog,
  SourceObserver,
  SourceRecord
} from './types.ts'
import { Wake, sleep } from './wake.ts'

/**
 * The assignor every member of a source's group proposes. Cooperative-sticky (KIP-429, here over the classic
 * protocol): a rebalance moves only the partitions that must move, and the others keep being fetched and
 * delivered throughout it, so scaling a source up or down interrupts — and redelivers — only what moves.
 */
const ASSIGNOR = 'cooperative-sticky'

// Fetch response error codes handled here (the rest mean "refresh metadata and try again").
const OFFSET_OUT_OF_RANGE = 1

/** Commit ticks between two looks for partitions added to the topics (5 s). */
const PARTITION_CHECK_TICKS = 5
/** How old the client's cached metadata may be (its `metadataMaxAge` default). */
const CLIENT_METADATA_MAX_AGE_MS = 5_000

// Special ListOffsets timestamps.
const EARLIEST_TIMESTAMP = -2n
const LATEST_TIMESTAMP = -1n

export interface SourceMemberOptions {
  readonly brokers: readonly string[]
  /** SASL/TLS to the source's brokers (its resolved `spec.net`); absent: PLAINTEXT. */
  readonly security?: KafkaClientSecurity
  readonly clientId: string
  readonly source: ConsumerSpec
  readonly maxInFlight: number
  /** The static member id (KIP-345): a member that comes back under it within the session timeout keeps its partitions. */
  readonly groupInstanceId: string
  readonly deliver: Deliver
  readonly committer: OffsetCommitter
  readonly log: SourceLog
  /** Default: FETCH_MAX_BYTES and FETCH_PARTITION_MAX_BYTES. */
  readonly fetchLimits?: FetchLimits
  readonly observer?: SourceObserver
  /**
   * Whether this member looks for partitions added to its topics (default true). One member per group and
   * dispatcher is enough — its rejoin rebalances the whole group — so a runner lets only its first one look.
   */
  readonly watchPartitions?: boolean
}

/** The member's part of a commit's identity, as of one moment. */
interface CommitIdentityOf {
  readonly generationId: number
  readonly memberId: string
  readonly coordinator: Broker
}

/** One owned partition's state in a member. */
interface PartitionRun {
  readonly id: string
  readonly topic: string
  readonly partition: number
  /** Undefined until the start position is known (committed offset, or initialOffset). */
  tracker: OffsetTracker | undefined
  /** Fetched records not started yet, from `head` on (a started one is let go). */
  queue: Array<QueuedRecord | undefined>
  head: number
  inFlight: number
  /** Set once the partition is no longer this member's: nothing more is fetched or started for it. */
  revoked: boolean
  /** Aborted when the partition leaves the member: its deliveries send nothing more (see `Deliver`). */
  readonly stop: AbortController
  /** Aborted when its drain is over: requests still on the wire are cut short. */
  readonly wire: AbortController
  resetting: boolean
  /** The partition's last stable offset in the latest fetch answer (read_committed: where it ends for us). */
  endOffset: bigint | undefined
  /** Its latest answer held no batch although data waited below the last stable offset: asked first next time. */
  starved: boolean
}

interface QueuedRecord {
  readonly record: SourceRecord
  readonly tracker: OffsetTracker
  readonly entry: TrackedOffset
}

/** A member's partition as `status()` shows it. */
export interface PartitionStatus {
  readonly topic: string
  readonly partition: number
  /** Next offset to fetch; undefined while the start position is being looked up. */
  readonly position: bigint | undefined
  /** The offset a commit would name now. */
  readonly committable: bigint | undefined
  /** The offset last committed by this member. */
  readonly committed: bigint | undefined
  /**
   * Records not handled yet: the partition's last stable offset at the latest fetch minus the committable offset
   * (what a commit now would name). Undefined before the first fetch answer.
   */
  readonly lag: bigint | undefined
  readonly queued: number
  readonly inFlight: number
}

/** One group member as `status()` shows it. */
export interface GroupMemberStatus {
  readonly groupInstanceId: string
  readonly memberId: string | null
  readonly generationId: number
  /** Joins and rebalances this member took part in (the client's events). */
  readonly joins: number
  readonly rebalances: number
  readonly inFlight: number
  readonly queued: number
  readonly partitions: readonly PartitionStatus[]
  readonly outcomes: Readonly<Record<Outcome, number>>
  /** Times `deliver` threw (each retried). */
  readonly deliverErrors: number
  /** Commits refused by the offset tracker, by reason: each one a bug caught before it could lose a record. */
  readonly commitsRefused: Readonly<Record<CommitRefusal, number>>
  /** Hand-overs by result (see `HandoverResult`). */
  readonly handovers: Readonly<Record<HandoverResult, number>>
}

export interface MemberCloseOptions {
  readonly drainMs: number
  /** Send LeaveGroup (the partitions move at once) rather than let the static membership hold them until the session times out. */
  readonly leaveGroup: boolean
}

/**
 * One vreplica: one member of the source's consumer group (classic protocol, static membership) with its own
 * fetch loop and delivery window. The client runs the membership — joins, the heartbeat on its own timer,
 * rejoins — while this decides what to fetch, what to deliver and what to commit. Records come from the
 * client's low-level `fetch` rather than its MessagesStream: that stream neither drops aborted transactions
 * reliably under read_committed nor pauses per partition, and it commits on its own schedule.
 */
export class SourceMember {
  readonly #options: SourceMemberOptions
  readonly #consumer: Consumer
  /** Fetches go on connections of their own, so a long-polling fetch never delays a heartbeat or a join. */
  readonly #fetchPool: ConnectionPool
  readonly #runs = new Map<string, PartitionRun>()
  readonly #wake = new Wake()
  readonly #abort = new AbortController()
  readonly #topics: ReadonlySet<string>
  #brokers = new Map<number, Broker>()
  /** The client's `assignments` array #reconcile last applied. */
  #reconciled: unknown
  #staleMetadata = false
  /** Fetch requests sent: rotates the order partitions are asked in (see `fetchOrder`). */
  #fetchRounds = 0
  /** Each subscribed topic's partition count when the member last looked (see #checkPartitions). */
  #partitionCounts: Map<string, number> | undefined
  #growthSeenAt: number | undefined
  #checkingPartitions = false
  #inFlight = 0
  #queued = 0
  #cursor = 0
  #stopping = false
  #loop: Promise<void> | undefined
  #commitTimer: NodeJS.Timeout | undefined
  #commitChain: Promise<void> = Promise.resolve()
  #commitPending = false
  #commitFailures = 0
  #joining: Promise<void> | undefined
  #inactiveSince: number | undefined
  #joins = 0
  #rebalances = 0
  #deliverErrors = 0
  readonly #outcomes: Record<Outcome, number> = { delivered: 0, 'dead-lettered': 0, dropped: 0 }
  readonly #commitsRefused: Record<CommitRefusal, number> = { 'past-unhandled': 0, released: 0, backwards: 0 }
  readonly #handovers: Record<HandoverResult, number> = { released: 0, awaited: 0, 'timed-out': 0, failed: 0 }
  /** Hand-overs of revoked partitions still draining (close waits for them). */
  readonly #releasing = new Set<Promise<void>>()
  #drained: Array<() => void> = []
  #closing: Promise<void> | undefined

  constructor(options: SourceMemberOptions) {
    this.#options = options
    this.#topics = new Set(options.source.topics)
    this.#consumer = new Consumer({
      clientId: options.clientId,
      bootstrapBrokers: [...options.brokers],
      ...kafkaSecurityOptions(options.security),
      groupId: options.source.groupId,
      groupInstanceId: options.groupInstanceId,
      sessionTimeout: GROUP_SESSION_TIMEOUT_MS,
      heartbeatInterval: GROUP_HEARTBEAT_INTERVAL_MS,
      rebalanceTimeout: GROUP_REBALANCE_TIMEOUT_MS,
      protocols: [{ name: ASSIGNOR, version: 1 }],
      // The leader's assignment: Shoal's own (see assignor.ts), not the client's cooperative-sticky one.
      partitionAssigner: balancedCooperativeAssigner,
      autocommit: false,
      isolationLevel: IsolationLevels.READ_COMMITTED,
      retries: 3,
      retryDelay: 250
    })
    this.#fetchPool = new ConnectionPool(`${options.clientId}-fetch`, kafkaSecurityOptions(options.security))
    this.#consumer.on('consumer:group:join', () => {
      this.#joins++
      this.#reconcile()
    })
    this.#consumer.on('consumer:group:rebalance', () => {
      this.#rebalances++
      // Partitions leave: each revoked one is handed over (see #handOver); the rest stay and are committed on
      // the usual tick.
      this.#reconcile()
    })
    this.#consumer.on('error', error => this.#options.log('warn', 'consumer group error', this.#fields({ error })))
  }

  get groupInstanceId(): string {
    return this.#options.groupInstanceId
  }

  /** Joins the group in the background and starts fetching and delivering. */
  start(): void {
    this.#consumer.topics.trackAll(...this.#options.source.topics)
    this.#loop = this.#run()
  }

  status(): GroupMemberStatus {
    const partitions: PartitionStatus[] = []
    for (const run of this.#runs.values()) {
      const committable = run.tracker?.committable()
      partitions.push({
        topic: run.topic,
        partition: run.partition,
        position: run.tracker?.position,
        committable,
        committed: run.tracker?.committed,
        lag: lagOf(run.endOffset, committable),
        queued: run.queue.length - run.head,
        inFlight: run.inFlight
      })
    }
    return {
      groupInstanceId: this.#options.groupInstanceId,
      memberId: this.#consumer.memberId,
      generationId: this.#consumer.generationId,
      joins: this.#joins,
      rebalances: this.#rebalances,
      inFlight: this.#inFlight,
      queued: this.#queued,
      partitions,
      outcomes: { ...this.#outcomes },
      deliverErrors: this.#deliverErrors,
      commitsRefused: { ...this.#commitsRefused },
      handovers: { ...this.#handovers }
    }
  }

  /**
   * Stops fetching and sending: records fetched but not started, and deliveries not on the wire (waiting for a
   * connection slot or a retry), are left to whoever consumes the partition next — they never reached the sink,
   * so that is no duplicate. Requests on the wire get up to `drainMs` to be answered; then the rest are cut
   * short, what is handled is committed, and the member leaves the group or not.
   */
  close(options: MemberCloseOptions): Promise<void> {
    this.#closing ??= this.#close(options)
    return this.#closing
  }

  async #close(options: MemberCloseOptions): Promise<void> {
    this.#stopping = true
    clearInterval(this.#commitTimer)
    for (const run of this.#runs.values()) {
      this.#dropQueue(run)
      run.stop.abort()
    }
    this.#wake.notify()
    await this.#waitForInFlight(options.drainMs)
    // Past the drain: what is still on the wire is cut short (not handled, so delivered again by the next owner).
    for (const run of this.#runs.values()) run.wire.abort()
    this.#abort.abort()
    await this.#loop?.catch(() => undefined)
    await Promise.all(this.#releasing)
    await this.#commitChain
    await withTimeout(this.#commitOnce(), 5_000).catch(error =>
      this.#options.log('warn', 'final offset commit failed', this.#fields({ error }))
    )
    const consumer = this.#consumer
    try {
      // A static member that closes without LeaveGroup keeps its partitions for the session timeout, so the
      // same dispatcher restarting takes them back without a rebalance. One that goes for good leaves by its
      // instance id (see OffsetCommitter.leave). Either way the client must not send its own LeaveGroup, which
      // it does whenever it has a member id: it is told it has none.
      const identity = options.leaveGroup ? this.#identity() : undefined
      if (identity !== undefined) {
        await withTimeout(
          this.#options.committer.leave(
            { groupId: this.#options.source.groupId, groupInstanceId: this.#options.groupInstanceId, ...identity },
            'vreplica stopped'
          ),
          5_000
        ).catch(error => this.#options.log('warn', 'LeaveGroup failed', this.#fields({ error })))
      }
      consumer.memberId = null
      await new Promise<void>(resolve => consumer.leaveGroup(false, () => resolve()))
      await consumer.close()
    } catch (error) {
      this.#options.log('warn', 'consumer did not close cleanly', this.#fields({ error }))
      await consumer.close(true).catch(() => undefined)
    }
    await this.#fetchPool.close().catch(() => undefined)
    this.#runs.clear()
  }

  async #run(): Promise<void> {
    await this.#join()
    if (this.#stopping) return
    const watching = this.#options.watchPartitions !== false
    // The partition counts the first assignment was made with, as near as the member can tell.
    if (watching) {
      await this.#consumer
        .metadata({ topics: [...this.#topics] })
        .then(m => (this.#partitionCounts ??= this.#partitionCountsIn(m)))
        .catch(() => undefined)
    }
    let ticks = 0
    this.#commitTimer = setInterval(() => {
      this.#requestCommit()
      if (watching && ++ticks % PARTITION_CHECK_TICKS === 0) void this.#checkPartitions()
    }, COMMIT_INTERVAL_MS)
    this.#commitTimer.unref()
    await this.#fetchLoop()
  }

  /**
   * Partitions added to a subscribed topic are assigned only by a rebalance, and neither the client nor the
   * coordinator starts one for them: a member that sees a topic grow rejoins (once every member's cached metadata
   * is older than the growth, so the leader assigns with the new count).
   */
  async #checkPartitions(): Promise<void> {
    if (this.#stopping || this.#checkingPartitions) return
    this.#checkingPartitions = true
    try {
      const counts = this.#partitionCountsIn(
        await this.#consumer.metadata({ topics: [...this.#topics], forceUpdate: true })
      )
      const known = this.#partitionCounts
      if (known === undefined) {
        this.#partitionCounts = counts
        return
      }
      const grown = [...counts].filter(([t, n]) => n > (known.get(t) ?? 0))
      if (grown.length === 0) {
        this.#growthSeenAt = undefined
        return
      }
      this.#growthSeenAt ??= Date.now()
      if (Date.now() - this.#growthSeenAt < CLIENT_METADATA_MAX_AGE_MS + 500) return
      this.#partitionCounts = counts
      this.#growthSeenAt = undefined
      this.#options.log('info', 'partitions added to a topic; rejoining the group', this.#fields({ topics: grown }))
      await this.#consumer.joinGroup({})
    } catch (error) {
      if (!this.#stopping) this.#options.log('warn', 'checking for added partitions failed', this.#fields({ error }))
    } finally {
      this.#checkingPartitions = false
    }
  }

  #partitionCountsIn(metadata: ClusterMetadata): Map<string, number> {
    return new Map([...this.#topics].map(t => [t, metadata.topics.get(t)?.partitionsCount ?? 0]))
  }

  /** Joins (or rejoins) the group, retrying until it succeeds or the member stops. */
  #join(): Promise<void> {
    this.#joining ??= (async () => {
      let failures = 0
      while (!this.#stopping) {
        try {
          await this.#consumer.joinGroup({})
          return
        } catch (error) {
          if (this.#stopping) return
          failures++
          this.#options.log('warn', 'joining the consumer group failed; retrying', this.#fields({ error, failures }))
          await sleep(Math.min(5_000, 250 * 2 ** Math.min(failures, 5)), this.#abort.signal)
        }
      }
    })().finally(() => (this.#joining = undefined))
    return this.#joining
  }

  async #fetchLoop(): Promise<void> {
    let failures = 0
    while (!this.#stopping) {
      this.#reconcile()
      this.#watchMembership()
      const runs = this.#fetchable()
      if (runs.length === 0) {
        await this.#wake.wait(FETCH_MAX_WAIT_MS)
        continue
      }
      try {
        await this.#fetchRound(runs)
        failures = 0
      } catch (error) {
        if (this.#stopping) return
        failures++
        this.#staleMetadata = true
        if (failures > 3) this.#options.log('warn', 'fetch failed; retrying', this.#fields({ error, failures }))
        await sleep(Math.min(2_000, 100 * 2 ** Math.min(failures, 5)), this.#abort.signal)
      }
    }
  }

  /**
   * The client rejoins by itself when a heartbeat says so, but gives up after its retries; a member left
   * outside the group that long joins again here.
   */
  #watchMembership(): void {
    if (this.#consumer.isActive() || this.#joining) {
      this.#inactiveSince = undefined
      return
    }
    this.#inactiveSince ??= Date.now()
    if (Date.now() - this.#inactiveSince > GROUP_REBALANCE_TIMEOUT_MS) {
      this.#inactiveSince = undefined
      this.#options.log('warn', 'member outside its group; rejoining', this.#fields({}))
      void this.#join()
    }
  }

  /**
   * Partitions to fetch now: started, not revoked, every record of their last fetch started, and not too far
   * ahead of their commit. So a member holds at most one fetch per partition that waits for a slot: when the
   * window is full, fetching stops (backpressure), while a partition with room goes on being fetched.
   */
  #fetchable(): PartitionRun[] {
    const runs: PartitionRun[] = []
    for (const run of this.#runs.values()) {
      if (run.revoked || run.resetting || run.tracker === undefined) continue
      if (run.head < run.queue.length) continue
      if (run.tracker.outstanding >= MAX_UNCOMMITTED_PER_PARTITION) continue
      runs.push(run)
    }
    return runs
  }

  async #fetchRound(runs: readonly PartitionRun[]): Promise<void> {
    const metadata = await this.#consumer.metadata({ topics: [...this.#topics], forceUpdate: this.#staleMetadata })
    this.#staleMetadata = false
    this.#rememberBrokers(metadata)
    const byNode = new Map<number, PartitionRun[]>()
    for (const run of runs) {
      const leader = metadata.topics.get(run.topic)?.partitions[run.partition]?.leader
      if (leader === undefined || leader < 0) {
        this.#staleMetadata = true
        continue
      }
      const list = byNode.get(leader) ?? []
      list.push(run)
      byNode.set(leader, list)
    }
    // No partition with a known leader (an election): wait a moment rather than ask for metadata at once again.
    if (byNode.size === 0) await sleep(250, this.#abort.signal)
    await Promise.all([...byNode].map(([node, list]) => this.#fetchFrom(node, list, metadata)))
  }

  async #fetchFrom(node: number, runs: readonly PartitionRun[], metadata: ClusterMetadata): Promise<void> {
    const requested = new Map<string, { run: PartitionRun; position: bigint }>()
    const byTopicId = new Map<string, fetchV17.FetchRequestPartition[]>()
    const topicOf = new Map<string, string>()
    for (const run of fetchOrder(runs, this.#fetchRounds++, r => r.starved)) {
      const topicId = metadata.topics.get(run.topic)?.id
      if (topicId === undefined || run.tracker === undefined) continue
      topicOf.set(topicId, run.topic)
      const position = run.tracker.position
      requested.set(run.id, { run, position })
      const list = byTopicId.get(topicId) ?? []
      list.push({
        partition: run.partition,
        fetchOffset: position,
        partitionMaxBytes: this.#options.fetchLimits?.partitionMaxBytes ?? FETCH_PARTITION_MAX_BYTES,
        currentLeaderEpoch: -1,
        lastFetchedEpoch: -1
      })
      byTopicId.set(topicId, list)
    }
    if (requested.size === 0) return
    let response: fetchV17.FetchResponse
    try {
      response = await this.#consumer.fetch({
        node,
        topics: [...byTopicId].map(([topicId, partitions]) => ({ topicId, partitions })),
        minBytes: 1,
        maxBytes: this.#options.fetchLimits?.maxBytes ?? FETCH_MAX_BYTES,
        maxWaitTime: FETCH_MAX_WAIT_MS,
        isolationLevel: IsolationLevels.READ_COMMITTED,
        connectionPool: this.#fetchPool
      })
    } catch (error) {
      // A partition-level error fails the whole call; the other partitions' data is still in the response.
      const partial = fetchResponseOf(error)
      if (partial === undefined) throw error
      response = partial
    }
    const fetchedAt = performance.now()
    for (const topicResponse of response.responses) {
      const topic = topicOf.get(topicResponse.topicId)
      if (topic === undefined) continue
      for (const p of topicResponse.partitions) {
        const asked = requested.get(`${topic}/${p.partitionIndex}`)
        if (asked === undefined) continue
        const { run, position } = asked
        // The partition moved, was reset or refetched meanwhile: this answer is stale.
        if (run.revoked || run.tracker === undefined || run.tracker.position !== position || this.#stopping) continue
        if (p.errorCode === OFFSET_OUT_OF_RANGE) {
          void this.#resetOutOfRange(run, position)
          continue
        }
        if (p.errorCode !== 0) {
          this.#staleMetadata = true
          continue
        }
        if (p.lastStableOffset >= 0n) run.endOffset = p.lastStableOffset
        this.#accept(run, p, fetchedAt)
      }
    }
    this.#pump()
  }

  #accept(run: PartitionRun, p: fetchV17.FetchResponsePartition, fetchedAt: number): void {
    const tracker = run.tracker!
    const asked = tracker.position
    const decoded = decodeFetchedBatches(
      run.topic,
      run.partition,
      p.records ?? [],
      p.abortedTransactions ?? [],
      tracker.position,
      fetchedAt
    )
    if (run.head > 0 && run.head === run.queue.length) {
      run.queue = []
      run.head = 0
    }
    for (const record of decoded.records) {
      run.queue.push({ record, tracker, entry: tracker.fetched(record.offset) })
    }
    this.#queued += decoded.records.length
    tracker.advanceTo(decoded.next)
    run.starved = decoded.next === asked && p.lastStableOffset > asked
  }

  /**
   * Starts deliveries while the window has room, round-robin over partitions. Ordered: one record in flight
   * per partition. Unordered: a partition holds at most maxInFlight − (partitions − 1) slots, so however
   * slow its records are, every other partition keeps a slot.
   */
  #pump(): void {
    if (this.#stopping) return
    const max = this.#options.maxInFlight
    const runs = [...this.#runs.values()]
    if (runs.length === 0) return
    const cap = this.#options.source.ordering === 'ordered' ? 1 : Math.max(1, max - (runs.length - 1))
    let started = true
    while (started && this.#inFlight < max) {
      started = false
      for (let i = 0; i < runs.length && this.#inFlight < max; i++) {
        const run = runs[(this.#cursor + i) % runs.length]!
        if (run.inFlight < cap && run.head < run.queue.length) {
          this.#start(run)
          started = true
        }
      }
      this.#cursor = (this.#cursor + 1) % runs.length
    }
  }

  #start(run: PartitionRun): void {
    const item = run.queue[run.head]!
    run.queue[run.head] = undefined
    run.head++
    this.#queued--
    run.inFlight++
    this.#inFlight++
    item.tracker.handed(item.entry)
    this.#deliver(run, item, DELIVER_ERROR_BACKOFF_MS.first)
  }

  /**
   * Delivers one record until it is handled; a `deliver` that throws is retried after `backoff` (doubling).
   * A try is one promise reaction, not a suspended async frame: a record held by a slow sink costs little here.
   */
  #deliver(run: PartitionRun, item: QueuedRecord, backoff: number): void {
    const signal = run.stop.signal
    if (signal.aborted) {
      this.#ended(run)
      return
    }
    let delivering: Promise<Outcome>
    try {
      delivering = this.#options.deliver(item.record, signal, run.wire.signal)
    } catch (error) {
      delivering = Promise.reject(error)
    }
    delivering.then(
      outcome => {
        this.#outcomes[outcome] = (this.#outcomes[outcome] ?? 0) + 1
        item.tracker.handled(item.entry)
        this.#ended(run)
      },
      error => void this.#retry(run, item, backoff, error)
    )
  }

  async #retry(run: PartitionRun, item: QueuedRecord, backoff: number, error: unknown): Promise<void> {
    const signal = run.stop.signal
    if (!signal.aborted) {
      this.#deliverErrors++
      this.#options.log(
        'warn',
        'deliver failed; retrying the record',
        this.#fields({ error, topic: run.topic, partition: run.partition, offset: String(item.record.offset) })
      )
      await sleep(backoff, signal)
    }
    this.#deliver(run, item, Math.min(backoff * 2, DELIVER_ERROR_BACKOFF_MS.max))
  }

  /** A record's delivery is over (handled, or its partition left): its slot goes to the next record. */
  #ended(run: PartitionRun): void {
    run.inFlight--
    this.#inFlight--
    if (this.#inFlight === 0) for (const resolve of this.#drained.splice(0)) resolve()
    this.#pump()
    this.#wake.notify()
  }

  /**
   * Brings the owned partitions in line with the client's assignment. The client replaces its `assignments`
   * array on every change and partitions come and go only here, so an unchanged array means nothing to do: the
   * fetch loop, woken after every delivery, pays one comparison.
   */
  #reconcile(): void {
    const assignments = this.#consumer.assignments
    if (assignments === null || assignments === this.#reconciled) return
    this.#reconciled = assignments
    const wanted = new Map<string, { topic: string; partition: number }>()
    for (const { topic, partitions } of assignments) {
      if (!this.#topics.has(topic)) continue
      for (const partition of partitions) wanted.set(`${topic}/${partition}`, { topic, partition })
    }
    const revoked = [...this.#runs.values()].filter(run => !wanted.has(run.id))
    if (revoked.length > 0) this.#revoke(revoked)
    // A closing member is still in the group until it leaves: what is revoked meanwhile is handed over as usual
    // (above), what is added is left for the next rebalance.
    if (this.#stopping) return
    const added: PartitionRun[] = []
    for (const [id, { topic, partition }] of wanted) {
      if (this.#runs.has(id)) continue
      const run: PartitionRun = {
        id,
        topic,
        partition,
        tracker: undefined,
        queue: [],
        head: 0,
        inFlight: 0,
        revoked: false,
        stop: new AbortController(),
        wire: new AbortController(),
        resetting: false,
        endOffset: undefined,
        starved: false
      }
      this.#runs.set(id, run)
      added.push(run)
    }
    if (added.length > 0) void this.#resolvePositions(added)
  }

  /** Partitions leave: nothing more is fetched or started for them, and each is handed over (see #handOver). */
  #revoke(runs: readonly PartitionRun[]): void {
    for (const run of runs) {
      run.revoked = true
      run.stop.abort()
      this.#dropQueue(run)
      this.#runs.delete(run.id)
    }
    this.#options.log(
      'info',
      'partitions revoked',
      this.#fields({ partitions: runs.map(r => r.id), inFlight: runs.reduce((n, r) => n + r.inFlight, 0) })
    )
    for (const run of runs) {
      if (run.tracker === undefined) continue
      const handover = this.#handOver(run, run.tracker).finally(() => this.#releasing.delete(handover))
      this.#releasing.add(handover)
    }
  }

  /**
   * Hands a revoked partition over to its next owner, as `handover.ts` describes: commits what is handled with
   * the draining mark while deliveries are on the wire, waits for them (at most REVOKE_DRAIN_MS), cuts the rest,
   * and commits the release. Each commit names the member's generation of the moment it is sent: the group has
   * moved on by then (the client rejoins at once), and the coordinator takes a commit from a current member.
   */
  async #handOver(run: PartitionRun, tracker: OffsetTracker): Promise<void> {
    const drainUntil = Date.now() + REVOKE_DRAIN_MS
    if (run.inFlight > 0) {
      const mark = drainingMark(this.#options.groupInstanceId)
      await this.#chained(() => withTimeout(this.#commitRuns([{ run, tracker }], mark, true), 2_000)).catch(
        () => undefined
      )
      while (run.inFlight > 0 && Date.now() < drainUntil && !this.#abort.signal.aborted) {
        await this.#wake.wait(drainUntil - Date.now())
      }
    }
    run.wire.abort()
    const giveUpAt = Math.max(drainUntil, Date.now()) + RELEASE_COMMIT_MS
    for (let attempt = 1; ; attempt++) {
      try {
        // Bounded by the give-up time: a release that lands later could land after the next owner started.
        await this.#chained(() =>
          withTimeout(this.#commitRuns([{ run, tracker }], null, true), Math.max(1, giveUpAt - Date.now()))
        )
        this.#handedOver('released')
        break
      } catch (error) {
        if (Date.now() + 100 > giveUpAt || this.#abort.signal.aborted) {
          this.#handedOver('failed')
          this.#options.log(
            'warn',
            'handing over a revoked partition failed; its next owner starts from the last commit',
            this.#fields({ error, partition: run.id, committable: String(tracker.committable()), attempt })
          )
          break
        }
        await sleep(100, this.#abort.signal)
      }
    }
    tracker.release()
  }

  #dropQueue(run: PartitionRun): void {
    this.#queued -= run.queue.length - run.head
    run.queue = []
    run.head = 0
  }

  /**
   * Where newly assigned partitions start: the group's committed offset, else initialOffset. A committed offset
   * with the draining mark (see `handover.ts`) is waited on until its former owner releases it, at most
   * HANDOVER_WAIT_MS from when this member first saw the mark.
   */
  async #resolvePositions(runs: readonly PartitionRun[]): Promise<void> {
    const current = (): PartitionRun[] => runs.filter(r => !r.revoked && r.tracker === undefined)
    const markSeen = new Map<PartitionRun, number>()
    /** Runs starting past a mark never released: their first commit clears it. */
    const pastMark = new Set<PartitionRun>()
    for (let attempt = 1; !this.#stopping && current().length > 0; attempt++) {
      const pending = current()
      try {
        const committed = await this.#committedOffsets(pending)
        const missing: PartitionRun[] = []
        const starts = new Map<PartitionRun, bigint>()
        let waiting = false
        for (const run of pending) {
          const found = committed.get(run.id)
          const draining = drainingMember(found?.metadata)
          if (draining !== undefined) {
            const seen = markSeen.get(run) ?? Date.now()
            markSeen.set(run, seen)
            if (Date.now() - seen < HANDOVER_WAIT_MS) {
              waiting = true
              continue
            }
            this.#handedOver('timed-out')
            pastMark.add(run)
            this.#options.log(
              'warn',
              'a former owner did not release the partition in time; starting from its last commit',
              this.#fields({ partition: run.id, formerOwner: draining, offset: String(found?.offset) })
            )
          } else if (markSeen.has(run)) {
            this.#handedOver('awaited')
          }
          if (found === undefined || found.offset < 0n) missing.push(run)
          else starts.set(run, found.offset)
        }
        if (missing.length > 0) {
          for (const [run, offset] of await this.#initialPositions(missing)) starts.set(run, offset)
        }
        for (const [run, offset] of starts) {
          if (run.revoked || run.tracker !== undefined) continue
          // A start taken from the committed offset needs no commit; one from initialOffset gets one at once, and
          // so does one past a draining mark its former owner never released (the commit clears the mark).
          const recommit = missing.includes(run) || pastMark.has(run)
          run.tracker = new OffsetTracker(offset, recommit ? undefined : offset)
        }
        if (missing.length > 0) this.#requestCommit()
        this.#wake.notify()
        if (waiting) await sleep(100, this.#abort.signal)
      } catch (error) {
        if (this.#stopping) return
        this.#options.log('warn', 'looking up start offsets failed; retrying', this.#fields({ error, attempt }))
        await sleep(Math.min(5_000, 250 * 2 ** Math.min(attempt, 5)), this.#abort.signal)
      }
    }
  }

  /** The group's committed offsets of some partitions, with their metadata, from the coordinator. */
  async #committedOffsets(runs: readonly PartitionRun[]): Promise<Map<string, CommittedOffset>> {
    const identity = await this.#identityNow()
    return this.#options.committer.committed(identity.coordinator, this.#options.source.groupId, runs)
  }

  /** Where newly assigned partitions without a committed offset start: the log's start or end, as initialOffset says. */
  #initialPositions(runs: readonly PartitionRun[]): Promise<Map<PartitionRun, bigint>> {
    return this.#offsetsAt(
      runs,
      this.#options.source.initialOffset === 'earliest' ? EARLIEST_TIMESTAMP : LATEST_TIMESTAMP
    )
  }

  /** The partitions' earliest or latest (last stable) offsets. */
  async #offsetsAt(runs: readonly PartitionRun[], timestamp: bigint): Promise<Map<PartitionRun, bigint>> {
    const topics = [...new Set(runs.map(r => r.topic))]
    const partitions: Record<string, number[]> = {}
    for (const run of runs) (partitions[run.topic] ??= []).push(run.partition)
    const offsets = await this.#consumer.listOffsets({
      topics,
      partitions,
      timestamp,
      isolationLevel: IsolationLevels.READ_COMMITTED
    })
    const result = new Map<PartitionRun, bigint>()
    for (const run of runs) {
      const offset = offsets.get(run.topic)?.[run.partition]
      if (offset === undefined)
        throw new Error(`no ${timestamp === EARLIEST_TIMESTAMP ? 'earliest' : 'latest'} offset for ${run.id}`)
      result.set(run, offset)
    }
    return result
  }

  /**
   * The fetch position is not in the log: below its start (retention deleted records) it starts again at the
   * log's start, past its end (the log was truncated) at its end — whatever `initialOffset` says, so no record that
   * still exists is skipped. Moving forward skips nothing; moving back waits until the partition has nothing
   * outstanding.
   */
  async #resetOutOfRange(run: PartitionRun, position: bigint): Promise<void> {
    if (run.resetting) return
    run.resetting = true
    try {
      const [start, end] = await Promise.all(
        [EARLIEST_TIMESTAMP, LATEST_TIMESTAMP].map(async t => (await this.#offsetsAt([run], t)).get(run)!)
      )
      if (run.revoked || run.tracker === undefined || run.tracker.position !== position) return
      const target = position < start! ? start! : position > end! ? end! : position
      if (target === position) return
      this.#options.log(
        'warn',
        'fetch position out of range; moving to the log',
        this.#fields({ partition: run.id, from: String(position), to: String(target) })
      )
      if (target > position) run.tracker.advanceTo(target)
      else if (run.tracker.outstanding === 0 && run.inFlight === 0) run.tracker = new OffsetTracker(target)
    } catch (error) {
      if (this.#stopping) return
      this.#options.log('warn', 'resetting an out-of-range position failed', this.#fields({ error, partition: run.id }))
      await sleep(1_000, this.#abort.signal)
    } finally {
      run.resetting = false
      this.#wake.notify()
    }
  }

  /**
   * Runs a commit after every commit already on its way, so commits of one member reach the coordinator in the
   * order they were decided: a periodic commit sent before a revoke can neither erase the hand-over's draining
   * mark nor land after its release.
   */
  #chained<T>(commit: () => Promise<T>): Promise<T> {
    const result = this.#commitChain.then(commit)
    this.#commitChain = result.then(
      () => undefined,
      () => undefined
    )
    return result
  }

  /** Commits the owned partitions now, after any commit already on its way. */
  #requestCommit(): void {
    // A periodic tick while a commit is queued adds nothing: the queued one reads the offsets when it runs.
    if (this.#commitPending) return
    this.#commitPending = true
    this.#commitChain = this.#commitChain
      .then(() => {
        this.#commitPending = false
        return this.#commitOnce()
      })
      .catch(error => {
        this.#commitFailures++
        // Commits fail during rebalances and coordinator moves; the next tick retries with fresh offsets.
        if (this.#commitFailures % 10 === 3) {
          this.#options.log('warn', 'offset commit failed', this.#fields({ error, failures: this.#commitFailures }))
        }
      })
  }

  #identity(): CommitIdentityOf | undefined {
    const memberId = this.#consumer.memberId
    const coordinatorId = this.#consumer.coordinatorId
    const coordinator = coordinatorId === null ? undefined : this.#brokers.get(coordinatorId)
    if (!memberId || coordinator === undefined) return undefined
    return { generationId: this.#consumer.generationId, memberId, coordinator }
  }

  /** The member's identity now, learning the coordinator's address first if need be; throws without one. */
  async #identityNow(): Promise<CommitIdentityOf> {
    if (this.#identity() === undefined && this.#consumer.memberId) {
      this.#rememberBrokers(await this.#consumer.metadata({ topics: [...this.#topics] }))
    }
    const identity = this.#identity()
    if (identity === undefined) throw new Error('no group membership (or coordinator) to commit with yet')
    return identity
  }

  async #commitOnce(): Promise<void> {
    const owned: Array<{ run: PartitionRun; tracker: OffsetTracker }> = []
    for (const run of this.#runs.values()) if (run.tracker !== undefined) owned.push({ run, tracker: run.tracker })
    await this.#commitRuns(owned, null, false)
  }

  /**
   * The one way offsets are committed. Each partition's offset is its tracker's committable one, and the tracker
   * authorizes it (never past a record not handled, never backwards, never after the partition's release); a
   * refusal is counted and logged, and that partition left out. `always`: commit even an unchanged offset (to
   * write `metadata`). Throws when the commit fails.
   */
  async #commitRuns(
    runs: ReadonlyArray<{ run: PartitionRun; tracker: OffsetTracker }>,
    metadata: string | null,
    always: boolean
  ): Promise<void> {
    const due: Array<{ run: PartitionRun; tracker: OffsetTracker; offset: bigint }> = []
    for (const { run, tracker } of runs) {
      const offset = tracker.committable()
      const verdict = tracker.authorize(offset)
      if (verdict.kind === 'refused') {
        this.#refused(run, offset, verdict.reason, verdict.limit)
        continue
      }
      if (verdict.kind === 'commit' || always) due.push({ run, tracker, offset })
    }
    if (due.length === 0) return
    const identity = await this.#identityNow()
    await this.#options.committer.commit(
      { groupId: this.#options.source.groupId, groupInstanceId: this.#options.groupInstanceId, ...identity },
      due.map(({ run, offset }) => ({ topic: run.topic, partition: run.partition, offset, metadata }))
    )
    this.#commitFailures = 0
    for (const { tracker, offset } of due) tracker.committedAt(offset)
  }

  #handedOver(result: HandoverResult): void {
    this.#handovers[result]++
    this.#options.observer?.onHandover?.({ sourceKey: this.#options.source.key, result })
  }

  #refused(run: PartitionRun, offset: bigint, reason: CommitRefusal, limit: bigint): void {
    this.#commitsRefused[reason]++
    this.#options.observer?.onCommitRefused?.({
      sourceKey: this.#options.source.key,
      topic: run.topic,
      partition: run.partition,
      offset,
      reason
    })
    this.#options.log(
      'warn',
      'offset commit refused',
      this.#fields({ partition: run.id, offset: String(offset), reason, limit: String(limit) })
    )
  }

  #rememberBrokers(metadata: ClusterMetadata): void {
    this.#brokers = new Map([...metadata.brokers].map(([id, b]) => [id, { host: b.host, port: b.port }]))
  }

  #waitForInFlight(ms: number): Promise<void> {
    if (this.#inFlight === 0) return Promise.resolve()
    return new Promise(resolve => {
      const timer = setTimeout(resolve, ms)
      this.#drained.push(() => {
        clearTimeout(timer)
        resolve()
      })
    })
  }

  #fields(extra: Record<string, unknown>): Record<string, unknown> {
    return { source: this.#options.source.key, member: this.#options.groupInstanceId, ...extra }
  }
}

function lagOf(endOffset: bigint | undefined, committable: bigint | undefined): bigint | undefined {
  if (endOffset === undefined || committable === undefined) return undefined
  return endOffset > committable ? endOffset - committable : 0n
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  return Promise.race([
    promise,
    new Promise<T>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms)
    })
  ]).finally(() => clearTimeout(timer))
}
