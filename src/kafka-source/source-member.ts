import {
  GROUP_HEARTBEAT_INTERVAL_MS,
  GROUP_REBALANCE_TIMEOUT_MS,
  GROUP_SESSION_TIMEOUT_MS,
  IsolationLevels,
  KafkaConsumer,
  kafkaClientOptions,
  kafkaSecurityOptions
} from '../kafka/index.ts'
import { balancedCooperativeAssigner } from './assignor.ts'
import { COMMIT_INTERVAL_MS, FETCH_MAX_WAIT_MS } from './defaults.ts'
import { DeliveryWindow } from './delivery-window.ts'
import { GroupMembership } from './group-membership.ts'
import { MemberCommits } from './member-commits.ts'
import type { MemberContext, SourceMemberOptions } from './member-context.ts'
import { partitionStatusOf } from './member-status.ts'
import type { GroupMemberStatus } from './member-status.ts'
import { HandOvers } from './partition-handover.ts'
import { PartitionFetcher } from './partition-fetcher.ts'
import { newPartitionRun } from './partition-run.ts'
import type { PartitionRun } from './partition-run.ts'
import { StartPositions } from './start-positions.ts'
import { Wake, sleep, withTimeout } from './wake.ts'

/**
 * The assignor every member of a source's group proposes. Cooperative-sticky (KIP-429, here over the classic
 * protocol): a rebalance moves only the partitions that must move, and the others keep being fetched and
 * delivered throughout it, so scaling a source up or down interrupts — and redelivers — only what moves.
 */
const ASSIGNOR = 'cooperative-sticky'

/** Commit ticks between two looks for partitions added to the topics (5 s). */
const PARTITION_CHECK_TICKS = 5

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
 *
 * The parts, each in its own file: GroupMembership (joins, identity for commits), PartitionFetcher,
 * DeliveryWindow, StartPositions, MemberCommits (the one commit path) and HandOvers (revoked partitions). This
 * class owns the partitions — only it adds and removes them, following the client's assignment — and the
 * member's life: start, the fetch loop, the commit timer, close.
 */
export class SourceMember {
  readonly #options: SourceMemberOptions
  readonly #consumer: KafkaConsumer
  readonly #runs = new Map<string, PartitionRun>()
  readonly #wake = new Wake()
  readonly #abort = new AbortController()
  readonly #topics: ReadonlySet<string>
  readonly #membership: GroupMembership
  readonly #window: DeliveryWindow
  readonly #commits: MemberCommits
  readonly #handOvers: HandOvers
  readonly #positions: StartPositions
  readonly #fetcher: PartitionFetcher
  /** The client's `assignments` array #reconcile last applied. */
  #reconciled: unknown
  #stopping = false
  #loop: Promise<void> | undefined
  #commitTimer: NodeJS.Timeout | undefined
  #joins = 0
  #rebalances = 0
  #closing: Promise<void> | undefined
  /** When what is on the wire is cut: the earliest any `close` asked for (a fence shortens a close under way). */
  #cutAt = Number.POSITIVE_INFINITY
  #cutTimer: NodeJS.Timeout | undefined
  readonly #cutDue = new Wake()

  constructor(options: SourceMemberOptions) {
    this.#options = options
    this.#topics = new Set(options.source.topics)
    this.#consumer = new KafkaConsumer({
      ...kafkaClientOptions(options.clientId, options.brokers, 'group'),
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
    const ctx: MemberContext = {
      options,
      consumer: this.#consumer,
      topics: this.#topics,
      runs: this.#runs,
      wake: this.#wake,
      signal: this.#abort.signal,
      stopping: () => this.#stopping,
      fields: extra => this.#fields(extra)
    }
    this.#membership = new GroupMembership(ctx)
    this.#window = new DeliveryWindow(ctx)
    this.#commits = new MemberCommits(ctx, this.#membership)
    this.#handOvers = new HandOvers(ctx, this.#commits)
    this.#positions = new StartPositions(ctx, this.#membership, this.#commits, this.#handOvers)
    this.#fetcher = new PartitionFetcher(ctx, this.#membership, this.#positions, this.#window)
    this.#consumer.on('consumer:group:join', (joined: { readonly isLeader?: boolean }) => {
      this.#joins++
      this.#membership.noteJoin(joined.isLeader === true)
      this.#reconcile()
    })
    this.#consumer.on('consumer:group:rebalance', () => {
      this.#rebalances++
      // Partitions leave: each revoked one is handed over (see HandOvers); the rest stay and are committed on
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
    return {
      groupInstanceId: this.#options.groupInstanceId,
      memberId: this.#consumer.memberId,
      generationId: this.#consumer.generationId,
      joins: this.#joins,
      rebalances: this.#rebalances,
      inFlight: this.#window.inFlight,
      queued: this.#window.queued,
      partitions: [...this.#runs.values()].map(partitionStatusOf),
      outcomes: this.#window.outcomes(),
      deliverErrors: this.#window.deliverErrors,
      commitsRefused: this.#commits.commitsRefused(),
      strandedRepairs: this.#membership.strandedRepairs,
      handovers: this.#handOvers.counts()
    }
  }

  /**
   * Stops fetching and sending: records fetched but not started, and deliveries not on the wire (waiting for a
   * connection slot or a retry), are left to whoever consumes the partition next — they never reached the sink,
   * so that is no duplicate. Requests on the wire get up to `drainMs` to be answered; then the rest are cut
   * short, what is handled is committed, and the member leaves the group or not. Called again while closing, a
   * shorter `drainMs` cuts the drain under way sooner (a fence during a graceful close); the rest of the first
   * call's options stand.
   */
  close(options: MemberCloseOptions): Promise<void> {
    this.#cutWithin(options.drainMs)
    this.#closing ??= this.#close(options)
    return this.#closing
  }

  #cutWithin(ms: number): void {
    const at = Date.now() + ms
    if (at >= this.#cutAt) return
    this.#cutAt = at
    clearTimeout(this.#cutTimer)
    this.#cutTimer = setTimeout(() => this.#cutDue.notify(), ms)
  }

  async #close(options: MemberCloseOptions): Promise<void> {
    this.#stopping = true
    clearInterval(this.#commitTimer)
    for (const run of this.#runs.values()) {
      this.#window.dropQueue(run)
      run.stop.abort()
    }
    this.#wake.notify()
    const cut = this.#cutDue.wait(Math.max(0, this.#cutAt - Date.now()))
    await Promise.race([this.#window.waitForInFlight(options.drainMs), cut])
    // The drain is over: a later close cuts nothing more, and no timer is left behind.
    this.#cutAt = Number.NEGATIVE_INFINITY
    clearTimeout(this.#cutTimer)
    this.#cutDue.notify()
    // Past the drain: what is still on the wire is cut short (not handled, so delivered again by the next owner).
    for (const run of this.#runs.values()) run.wire.abort()
    this.#abort.abort()
    // Hand-overs still draining a revoked partition wait on the wake: they see the abort and cut theirs too.
    this.#wake.notify()
    await this.#loop?.catch(() => undefined)
    await this.#handOvers.settled()
    await this.#commits.settled()
    await withTimeout(this.#commits.commitOnce(), 5_000).catch(error =>
      this.#options.log('warn', 'final offset commit failed', this.#fields({ error }))
    )
    const consumer = this.#consumer
    try {
      // A static member that closes without LeaveGroup keeps its partitions for the session timeout, so the
      // same dispatcher restarting takes them back without a rebalance. One that goes for good leaves by its
      // instance id (see OffsetCommitter.leave). Either way the client must not send its own LeaveGroup, which
      // it does whenever it has a member id: it is told it has none.
      // It goes to the coordinator Kafka names now, should the client's answer nothing (see identityNow).
      if (options.leaveGroup && this.#membership.identity() !== undefined) {
        const leave = async () =>
          this.#options.committer.leave(
            {
              groupId: this.#options.source.groupId,
              groupInstanceId: this.#options.groupInstanceId,
              ...(await this.#membership.identityNow())
            },
            'vreplica stopped'
          )
        await withTimeout(leave(), 5_000).catch(error =>
          this.#options.log('warn', 'LeaveGroup failed', this.#fields({ error }))
        )
      }
      consumer.memberId = null
      await new Promise<void>(resolve => consumer.leaveGroup(false, () => resolve()))
      await consumer.close()
    } catch (error) {
      this.#options.log('warn', 'consumer did not close cleanly', this.#fields({ error }))
      await consumer.close(true).catch(() => undefined)
    }
    await this.#fetcher.close().catch(() => undefined)
    this.#runs.clear()
  }

  async #run(): Promise<void> {
    await this.#membership.join()
    if (this.#stopping) return
    const watching = this.#options.watchPartitions !== false
    if (watching) await this.#membership.notePartitionCounts()
    let ticks = 0
    this.#commitTimer = setInterval(() => {
      this.#commits.requestCommit()
      const due = ++ticks % PARTITION_CHECK_TICKS === 0
      if (watching && due) void this.#membership.checkPartitions()
      void this.#membership.checkAssignment(due)
    }, COMMIT_INTERVAL_MS)
    this.#commitTimer.unref()
    await this.#fetchLoop()
  }

  async #fetchLoop(): Promise<void> {
    let failures = 0
    while (!this.#stopping) {
      this.#reconcile()
      this.#membership.watchMembership()
      const runs = this.#fetcher.fetchable()
      if (runs.length === 0) {
        await this.#wake.wait(FETCH_MAX_WAIT_MS)
        continue
      }
      try {
        await this.#fetcher.fetchRound(runs)
        failures = 0
      } catch (error) {
        if (this.#stopping) return
        failures++
        this.#fetcher.markStale()
        if (failures > 3) this.#options.log('warn', 'fetch failed; retrying', this.#fields({ error, failures }))
        await sleep(Math.min(2_000, 100 * 2 ** Math.min(failures, 5)), this.#abort.signal)
      }
    }
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
      const run = newPartitionRun(id, topic, partition)
      this.#runs.set(id, run)
      added.push(run)
    }
    if (added.length > 0) void this.#positions.resolve(added)
  }

  /** Partitions leave: nothing more is fetched or started for them, and each is handed over (see HandOvers). */
  #revoke(runs: readonly PartitionRun[]): void {
    for (const run of runs) {
      run.revoked = true
      run.stop.abort()
      this.#window.dropQueue(run)
      this.#runs.delete(run.id)
    }
    this.#options.log(
      'info',
      'partitions revoked',
      this.#fields({ partitions: runs.map(r => r.id), inFlight: runs.reduce((n, r) => n + r.inFlight, 0) })
    )
    for (const run of runs) {
      if (run.tracker === undefined) continue
      this.#handOvers.begin(run, run.tracker)
    }
  }

  #fields(extra: Record<string, unknown>): Record<string, unknown> {
    return { source: this.#options.source.key, member: this.#options.groupInstanceId, ...extra }
  }
}
