import { KafkaConsumer } from './clients.ts'
import { AuthenticationError, ProtocolError } from '@platformatic/kafka'
import type { ClusterMetadata } from '@platformatic/kafka'
import { IsolationLevels, kafkaClientOptions } from './client-options.ts'
import type { KafkaConnection } from './client-options.ts'
import { fetchResponseOf } from './fetch-response.ts'
import { fetchOrder, readCommitted } from './read-committed.ts'
import type { AbortedTransaction, FetchLimits, FetchedBatch } from './read-committed.ts'

/** One committed record read from the log. */
export interface LogRecord {
  readonly topic: string
  readonly partition: number
  readonly offset: bigint
  readonly timestamp: bigint
  readonly key: Buffer | null
  readonly value: Buffer | null
  readonly headers: ReadonlyMap<string, Buffer>
}

export interface LogTailerOptions {
  readonly connection: KafkaConnection
  readonly topics: readonly string[]
  /** Called for every committed record, in offset order per partition. */
  readonly onRecord: (record: LogRecord) => void
  /** Called when a fetch fails; the tailer retries by itself. */
  readonly onError?: (error: unknown) => void
  readonly maxWaitMs?: number
  /**
   * Reads only the partitions this accepts (a dispatcher reads its own contracts partition, not all of them);
   * it gets the topic's partition count, so the choice can depend on it. Default: every partition.
   */
  readonly partitionFilter?: (topic: string, partition: number, partitionCount: number) => boolean
  /** Default TAILER_FETCH_LIMITS. */
  readonly fetchLimits?: FetchLimits
}

/**
 * A fetch waits at most `maxWaitMs` (500 ms) at the broker: one not answered in this long is overdue, and its broker
 * may have lost its partitions to another.
 */
const FETCH_OVERDUE_MS = 1_500

// Fetch answer error codes handled here (the rest mean "refresh metadata and try again").
const OFFSET_OUT_OF_RANGE = 1
/** How long a barrier tries to learn its partitions' ends, and how long it waits between tries. */
const ENDS_PATIENCE_MS = 10_000
const ENDS_RETRY_MS = 250

/** What one fetch of the tailer may return (a larger first batch still comes whole, KIP-74). */
const TAILER_FETCH_LIMITS: FetchLimits = Object.freeze({
  maxBytes: 16 * 1024 * 1024,
  partitionMaxBytes: 4 * 1024 * 1024
})

interface PartitionState {
  position: bigint
  /** Its latest answer held no batch although data waited below the last stable offset: asked first next time. */
  starved: boolean
  /** Waiters for `position >= offset`. */
  waiters: Array<{ offset: bigint; resolve: () => void }>
}

/**
 * Reads every partition of some topics from the beginning, with read_committed semantics done right:
 * the broker returns records up to the last stable offset but leaves dropping aborted transactions to
 * the client, so the tailer tracks each fetch's aborted-transaction list and skips those batches.
 * Not a group member: every controller reads every partition.
 */
export class LogTailer {
  readonly #options: LogTailerOptions
  readonly #consumer: KafkaConsumer
  /**
   * Asks for last stable offsets on its own connection: a broker answers the requests of one connection in
   * order, so behind a long-polling fetch a ListOffsets would wait out the fetch's maxWait.
   */
  readonly #offsets: KafkaConsumer
  readonly #partitions = new Map<string, PartitionState>()
  #metadata: ClusterMetadata | undefined
  #running = false
  #loop: Promise<void> | undefined
  /** Fetch requests sent: rotates the order partitions are asked in (see `fetchOrder`). */
  #rounds = 0
  readonly #abort = new AbortController()
  /** Settles (false) when the tailer closes, so the loop does not wait for a fetch in flight. */
  readonly #closed = new Promise<boolean>(resolve =>
    this.#abort.signal.addEventListener('abort', () => resolve(false), { once: true })
  )

  constructor(options: LogTailerOptions) {
    this.#options = options
    this.#consumer = new KafkaConsumer({
      ...kafkaClientOptions(`${options.connection.clientId}-tailer`, options.connection.brokers, 'fetch'),
      groupId: `${options.connection.clientId}-tailer-unused`,
      retries: 3,
      retryDelay: 250
    })
    this.#offsets = new KafkaConsumer({
      ...kafkaClientOptions(`${options.connection.clientId}-tailer-offsets`, options.connection.brokers, 'fetch'),
      groupId: `${options.connection.clientId}-tailer-unused`,
      // Retried by #ends, each try with fresh metadata: the client's own retries go to the leader it knew.
      retries: 0
    })
  }

  /** Starts reading; resolves once the topics' metadata is known. */
  async start(): Promise<void> {
    await this.#refreshMetadata()
    this.#running = true
    this.#loop = this.#run()
  }

  async close(): Promise<void> {
    this.#running = false
    this.#abort.abort()
    await this.#loop?.catch(() => undefined)
    for (const state of this.#partitions.values()) state.waiters.length = 0
    await Promise.all([this.#consumer.close(true), this.#offsets.close(true)])
  }

  /** The next offset the tailer will read in a partition. */
  position(topic: string, partition: number): bigint {
    return this.#partitions.get(`${topic}/${partition}`)?.position ?? 0n
  }

  partitionCount(topic: string): number {
    return this.#metadata?.topics.get(topic)?.partitionsCount ?? 0
  }

  /**
   * Resolves once every transaction appended to the given partitions before this call has been decided and,
   * if committed, applied: the tailer's position reached the partitions' high watermark of the moment. (Not
   * the last stable offset: right after a commit returns, its markers may not be written yet, and the LSO
   * still stands before the committed records.) With `timeoutMs`, resolves anyway when the time is up,
   * for readers that prefer a slightly stale answer to waiting on a transaction left open.
   */
  async barrier(
    targets: ReadonlyArray<{ topic: string; partitions?: readonly number[] }>,
    options: { timeoutMs?: number } = {}
  ): Promise<void> {
    // Asking for the ends stops at the caller's timeout too: tries no caller waits for any more are load on a cluster
    // that is already failing over.
    const patience = Math.min(ENDS_PATIENCE_MS, options.timeoutMs ?? Infinity)
    const all = this.#barrier(targets, Date.now() + patience)
    if (options.timeoutMs === undefined) return all
    // The timeout covers asking for the ends too: a broker that black-holes holds that request for its timeout.
    let timer: NodeJS.Timeout | undefined
    const timeout = new Promise<void>(resolve => (timer = setTimeout(resolve, options.timeoutMs)))
    await Promise.race([all.catch(() => undefined), timeout])
    clearTimeout(timer)
  }

  async #barrier(
    targets: ReadonlyArray<{ topic: string; partitions?: readonly number[] }>,
    giveUpAt: number
  ): Promise<void> {
    const ends = await this.#ends(targets, giveUpAt)
    const waits: Promise<void>[] = []
    for (const target of targets) {
      const offsets = ends.get(target.topic) ?? []
      const partitions = target.partitions ?? offsets.map((_, i) => i)
      const filter = this.#options.partitionFilter
      for (const partition of partitions) {
        const offset = offsets[partition]
        // A partition this tailer does not read is never waited for.
        if (filter && !filter(target.topic, partition, offsets.length)) continue
        if (offset !== undefined) waits.push(this.waitFor(target.topic, partition, offset))
      }
    }
    await Promise.all(waits)
  }

  /**
   * The end offsets of the targets' partitions, asked of their leaders — only the partitions named, so that a barrier
   * on partitions whose leaders answer does not wait on a broker that answers nothing (a store write, whose barrier is
   * its bucket's, waited for every bucket's leader: 10 s after a broker zone loss). A leader that answers nothing
   * fails the try at once or within the connect timeout, the library then asks for metadata once and tries the
   * leader it names; the tries go on, ENDS_RETRY_MS apart, until the leader has moved — until `giveUpAt` at most, and
   * not after an answer that no try can change (see `refusedForGood`).
   */
  async #ends(targets: ReadonlyArray<{ topic: string; partitions?: readonly number[] }>, giveUpAt: number) {
    const topics = [...new Set(targets.map(t => t.topic))]
    const partitions: Record<string, number[]> = {}
    for (const topic of topics) {
      const named = targets.filter(t => t.topic === topic)
      if (named.every(t => t.partitions !== undefined)) {
        partitions[topic] = [...new Set(named.flatMap(t => t.partitions!))]
      }
    }
    for (;;) {
      try {
        return await this.#offsets.listOffsets({ topics, partitions, isolationLevel: IsolationLevels.READ_UNCOMMITTED })
      } catch (error) {
        if (Date.now() >= giveUpAt || this.#abort.signal.aborted || refusedForGood(error)) throw error
        await new Promise(resolve => setTimeout(resolve, ENDS_RETRY_MS))
      }
    }
  }

  /** Resolves once the tailer's position in a partition reaches `offset`. */
  waitFor(topic: string, partition: number, offset: bigint): Promise<void> {
    const state = this.#state(topic, partition)
    if (state.position >= offset) return Promise.resolve()
    return new Promise(resolve => state.waiters.push({ offset, resolve }))
  }

  #state(topic: string, partition: number): PartitionState {
    const id = `${topic}/${partition}`
    let state = this.#partitions.get(id)
    if (!state) {
      state = { position: 0n, starved: false, waiters: [] }
      this.#partitions.set(id, state)
    }
    return state
  }

  async #refreshMetadata(): Promise<ClusterMetadata> {
    this.#metadata = await this.#consumer.metadata({ topics: [...this.#options.topics], forceUpdate: true })
    return this.#metadata
  }

  /**
   * Fetches from every leader broker at once, each broker's fetch on its own: a broker that black-holes (a zone lost
   * or cut off) holds only its own partitions, until its fetch times out, while the others read on — where one round
   * waited for every broker, one silent broker stopped the whole log for its request timeout and retries (about 20 s;
   * docs/faults.md). While a fetch is overdue the metadata is asked again, so partitions that got a new leader are
   * read from it within a second or two of the election.
   */
  async #run(): Promise<void> {
    let failures = 0
    const inFlight = new Map<number, { since: number; done: Promise<boolean> }>()
    let refreshedAt = 0
    while (this.#running) {
      try {
        const metadata = this.#metadata ?? (await this.#refreshMetadata())
        const plan = this.#plan(metadata)
        let stale = plan === undefined
        for (const [node, parts] of plan ?? []) {
          if (inFlight.has(node)) continue
          const done = this.#fetchFromNode(node, parts)
            .catch(() => true)
            .finally(() => inFlight.delete(node))
          inFlight.set(node, { since: Date.now(), done })
        }
        if (inFlight.size > 0) {
          let timer: NodeJS.Timeout | undefined
          const overdue = new Promise<boolean>(resolve => (timer = setTimeout(() => resolve(false), FETCH_OVERDUE_MS)))
          stale ||= await Promise.race([...[...inFlight.values()].map(f => f.done), overdue, this.#closed])
          clearTimeout(timer)
          const now = Date.now()
          if ([...inFlight.values()].some(f => now - f.since > FETCH_OVERDUE_MS)) stale ||= now - refreshedAt > 1_000
        }
        if (stale) {
          // Not at once again: a partition without a leader, or one in error, would make this a busy loop.
          await delay(100, this.#abort.signal)
          refreshedAt = Date.now()
          await this.#refreshMetadata()
        }
        failures = 0
      } catch (error) {
        if (!this.#running) return
        this.#options.onError?.(error)
        failures++
        await delay(Math.min(2_000, 100 * 2 ** Math.min(failures, 5)), this.#abort.signal)
        await this.#refreshMetadata().catch(() => undefined)
      }
    }
  }

  /** The partitions to read, by leader broker; undefined when a topic is not in the metadata (yet). */
  #plan(
    metadata: ClusterMetadata
  ): Map<number, Array<{ topic: string; topicId: string; partition: number; leaderEpoch: number }>> | undefined {
    const byNode = new Map<number, Array<{ topic: string; topicId: string; partition: number; leaderEpoch: number }>>()
    for (const topic of this.#options.topics) {
      const info = metadata.topics.get(topic)
      if (!info) return undefined
      info.partitions.forEach((p, partition) => {
        if (this.#options.partitionFilter && !this.#options.partitionFilter(topic, partition, info.partitionsCount))
          return
        const list = byNode.get(p.leader) ?? []
        list.push({ topic, topicId: info.id, partition, leaderEpoch: p.leaderEpoch })
        byNode.set(p.leader, list)
      })
    }
    return byNode
  }

  async #fetchFromNode(
    node: number,
    parts: Array<{ topic: string; topicId: string; partition: number; leaderEpoch: number }>
  ): Promise<boolean> {
    const byTopic = new Map<string, typeof parts>()
    const ordered = fetchOrder(parts, this.#rounds++, p => this.#state(p.topic, p.partition).starved)
    for (const p of ordered) byTopic.set(p.topicId, [...(byTopic.get(p.topicId) ?? []), p])
    const limits = this.#options.fetchLimits ?? TAILER_FETCH_LIMITS
    const fetching = this.#consumer.fetch({
      node,
      maxWaitTime: this.#options.maxWaitMs ?? 500,
      minBytes: 1,
      maxBytes: limits.maxBytes,
      isolationLevel: IsolationLevels.READ_COMMITTED,
      topics: [...byTopic].map(([topicId, list]) => ({
        topicId,
        partitions: list.map(p => ({
          partition: p.partition,
          fetchOffset: this.position(p.topic, p.partition),
          partitionMaxBytes: limits.partitionMaxBytes,
          currentLeaderEpoch: -1,
          lastFetchedEpoch: -1
        }))
      }))
    })
    // A partition-level error fails the whole call; the other partitions' data is still in the answer.
    const response = await fetching.catch(error => {
      const partial = fetchResponseOf(error)
      if (partial === undefined) throw error
      return partial
    })
    let stale = false
    const outOfRange: Array<{ topic: string; partition: number }> = []
    const topicNames = new Map(parts.map(p => [p.topicId, p.topic]))
    for (const topicResponse of response.responses) {
      const topic = topicNames.get(topicResponse.topicId)
      if (topic === undefined) continue
      for (const p of topicResponse.partitions) {
        if (p.errorCode === OFFSET_OUT_OF_RANGE) {
          // The log no longer holds the tailer's position (records deleted below it): read on from its start.
          outOfRange.push({ topic, partition: p.partitionIndex })
          continue
        }
        if (p.errorCode !== 0) {
          stale = true
          continue
        }
        this.#apply(topic, p.partitionIndex, p.records ?? [], p.abortedTransactions ?? [], p.lastStableOffset)
      }
    }
    if (outOfRange.length > 0) await this.#toLogStart(outOfRange)
    return stale
  }

  #apply(
    topic: string,
    partition: number,
    batches: readonly FetchedBatch[],
    abortedTransactions: readonly AbortedTransaction[],
    lastStableOffset: bigint
  ): void {
    const state = this.#state(topic, partition)
    const asked = state.position
    const next = readCommitted(batches, abortedTransactions, asked, (record, offset, timestamp) => {
      const headers = new Map<string, Buffer>()
      for (const [k, v] of record.headers) if (k && v) headers.set(k.toString(), v)
      this.#options.onRecord({ topic, partition, offset, timestamp, key: record.key, value: record.value, headers })
    })
    state.starved = next === asked && lastStableOffset > asked
    this.#moveTo(state, next)
  }

  /** Moves partitions whose position fell below the log's start to that start (never backwards). */
  async #toLogStart(partitions: ReadonlyArray<{ topic: string; partition: number }>): Promise<void> {
    const topics = [...new Set(partitions.map(p => p.topic))]
    const starts = await this.#offsets.listOffsets({ topics, timestamp: -2n })
    for (const { topic, partition } of partitions) {
      const start = starts.get(topic)?.[partition]
      if (start !== undefined) this.#moveTo(this.#state(topic, partition), start)
    }
  }

  #moveTo(state: PartitionState, position: bigint): void {
    if (position <= state.position) return
    state.position = position
    if (state.waiters.length > 0) {
      const ready = state.waiters.filter(w => w.offset <= position)
      state.waiters = state.waiters.filter(w => w.offset > position)
      for (const w of ready) w.resolve()
    }
  }
}

/**
 * Whether an error says no later try can succeed: Kafka refused for good (not authorized, a request it does not
 * take), as Kafka's own error codes say, or authentication failed. Every error of an aggregate must say so. Anything
 * else may pass: a timeout or a lost connection (the library marks a timeout not retriable; here it is exactly what a
 * retry is for), a broker's UNKNOWN_SERVER_ERROR, a garbled answer.
 */
export function refusedForGood(error: unknown): boolean {
  if (error instanceof AggregateError) return error.errors.length > 0 && error.errors.every(refusedForGood)
  if (error instanceof AuthenticationError) return true
  if (!(error instanceof ProtocolError)) return false
  const { apiId, canRetry } = error as { apiId?: unknown; canRetry?: unknown }
  return canRetry === false && apiId !== 'UNKNOWN_SERVER_ERROR'
}

function delay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise(resolve => {
    const timer = setTimeout(resolve, ms)
    signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true })
  })
}
