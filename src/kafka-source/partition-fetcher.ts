import { ConnectionPool } from '@platformatic/kafka'
import type { ClusterMetadata, fetchV17 } from '@platformatic/kafka'
import {
  IsolationLevels,
  fetchOrder,
  fetchResponseOf,
  kafkaConnectionTimeouts,
  kafkaSecurityOptions
} from '../kafka/index.ts'
import {
  FETCH_MAX_BYTES,
  FETCH_MAX_WAIT_MS,
  FETCH_PARTITION_MAX_BYTES,
  MAX_KEY_WAITING_PER_PARTITION,
  MAX_UNCOMMITTED_PER_PARTITION
} from './defaults.ts'
import type { DeliveryWindow } from './delivery-window.ts'
import type { GroupMembership } from './group-membership.ts'
import type { MemberContext } from './member-context.ts'
import type { PartitionRun } from './partition-run.ts'
import { waitingBehindKeys } from './partition-run.ts'
import { batchOpen } from './batch-builder.ts'
import { decodeFetchedBatches } from './record-batches.ts'
import type { StartPositions } from './start-positions.ts'
import { sleep } from './wake.ts'

// Fetch response error codes handled here (the rest mean "refresh metadata and try again").
const OFFSET_OUT_OF_RANGE = 1

/**
 * A member's fetches: one Fetch per partition leader for the partitions with room, their records decoded
 * (read_committed) into the partitions' queues, and the delivery window pumped.
 */
export class PartitionFetcher {
  readonly #ctx: MemberContext
  readonly #membership: GroupMembership
  readonly #positions: StartPositions
  readonly #window: DeliveryWindow
  /** Fetches go on connections of their own, so a long-polling fetch never delays a heartbeat or a join. */
  readonly #fetchPool: ConnectionPool
  #staleMetadata = false
  /** Fetch requests sent: rotates the order partitions are asked in (see `fetchOrder`). */
  #fetchRounds = 0

  constructor(ctx: MemberContext, membership: GroupMembership, positions: StartPositions, window: DeliveryWindow) {
    this.#ctx = ctx
    this.#membership = membership
    this.#positions = positions
    this.#window = window
    this.#fetchPool = new ConnectionPool(`${ctx.options.clientId}-fetch`, {
      ...kafkaSecurityOptions(ctx.options.security),
      ...kafkaConnectionTimeouts('fetch')
    })
  }

  /** The next round asks for fresh metadata (a fetch failed, or a leader is unknown). */
  markStale(): void {
    this.#staleMetadata = true
  }

  async close(): Promise<void> {
    await this.#fetchPool.close()
  }

  /**
   * Partitions to fetch now: started, not revoked, every record of their last fetch started (or, `ordering:
   * key`, waiting behind its key, up to MAX_KEY_WAITING_PER_PARTITION), and not too far ahead of their commit. So a member holds at most one fetch per partition that waits for a slot: when the
   * window is full, fetching stops (backpressure), while a partition with room goes on being fetched.
   */
  fetchable(): PartitionRun[] {
    const runs: PartitionRun[] = []
    for (const run of this.#ctx.runs.values()) {
      if (run.revoked || run.resetting || run.tracker === undefined) continue
      if (run.head < run.queue.length && !this.#batchOpen(run)) continue
      if (waitingBehindKeys(run) >= MAX_KEY_WAITING_PER_PARTITION) continue
      if (run.tracker.outstanding >= MAX_UNCOMMITTED_PER_PARTITION) continue
      runs.push(run)
    }
    return runs
  }

  // Batching: a partition whose unstarted records are a batch not full is fetched for more (they join it).
  #batchOpen(run: PartitionRun): boolean {
    const batching = this.#ctx.options.batching
    return batching !== undefined && batchOpen(run.queue.length - run.head, batching.limits)
  }

  async fetchRound(runs: readonly PartitionRun[]): Promise<void> {
    const metadata = await this.#ctx.consumer.metadata({
      topics: [...this.#ctx.topics],
      forceUpdate: this.#staleMetadata
    })
    this.#staleMetadata = false
    this.#membership.rememberBrokers(metadata)
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
    if (byNode.size === 0) await sleep(250, this.#ctx.signal)
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
        partitionMaxBytes: this.#ctx.options.fetchLimits?.partitionMaxBytes ?? FETCH_PARTITION_MAX_BYTES,
        currentLeaderEpoch: -1,
        lastFetchedEpoch: -1
      })
      byTopicId.set(topicId, list)
    }
    if (requested.size === 0) return
    let response: fetchV17.FetchResponse
    try {
      response = await this.#ctx.consumer.fetch({
        node,
        topics: [...byTopicId].map(([topicId, partitions]) => ({ topicId, partitions })),
        minBytes: 1,
        maxBytes: this.#ctx.options.fetchLimits?.maxBytes ?? FETCH_MAX_BYTES,
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
        if (run.revoked || run.tracker === undefined || run.tracker.position !== position || this.#ctx.stopping()) {
          continue
        }
        if (p.errorCode === OFFSET_OUT_OF_RANGE) {
          void this.#positions.resetOutOfRange(run, position)
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
    this.#window.pump()
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
    if (run.head > 0) {
      // Started records are let go (a batch waiting for more keeps its records at the front).
      run.queue = run.head === run.queue.length ? [] : run.queue.slice(run.head)
      run.head = 0
    }
    let queued = 0
    for (const record of decoded.records) {
      const entry = tracker.fetched(record.offset)
      // Handled by a former owner, as its commit said: not delivered again.
      if (entry.handled) continue
      run.queue.push({ record, tracker, entry })
      queued++
    }
    const skipped = decoded.records.length - queued
    if (skipped > 0)
      this.#ctx.options.observer?.onSkipped?.({ sourceKey: this.#ctx.options.source.key, records: skipped })
    this.#window.queuedMore(queued)
    tracker.advanceTo(decoded.next)
    run.starved = decoded.next === asked && p.lastStableOffset > asked
  }
}
