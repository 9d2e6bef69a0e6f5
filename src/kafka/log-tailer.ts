import { Consumer } from '@platformatic/kafka'
import type { ClusterMetadata } from '@platformatic/kafka'
import { IsolationLevels } from './client-options.ts'
import type { KafkaConnection } from './client-options.ts'

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
}

// Record batch attribute bits (Kafka protocol, RecordBatch.attributes).
const LOG_APPEND_TIME = 0x08
const TRANSACTIONAL = 0x10
const CONTROL = 0x20

interface PartitionState {
  position: bigint
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
  readonly #consumer: Consumer
  /**
   * Asks for last stable offsets on its own connection: a broker answers the requests of one connection in
   * order, so behind a long-polling fetch a ListOffsets would wait out the fetch's maxWait.
   */
  readonly #offsets: Consumer
  readonly #partitions = new Map<string, PartitionState>()
  #metadata: ClusterMetadata | undefined
  #running = false
  #loop: Promise<void> | undefined
  readonly #abort = new AbortController()

  constructor(options: LogTailerOptions) {
    this.#options = options
    this.#consumer = new Consumer({
      clientId: `${options.connection.clientId}-tailer`,
      bootstrapBrokers: [...options.connection.brokers],
      groupId: `${options.connection.clientId}-tailer-unused`,
      retries: 3,
      retryDelay: 250
    })
    this.#offsets = new Consumer({
      clientId: `${options.connection.clientId}-tailer-offsets`,
      bootstrapBrokers: [...options.connection.brokers],
      groupId: `${options.connection.clientId}-tailer-unused`,
      retries: 3,
      retryDelay: 250
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
    const topics = targets.map(t => t.topic)
    const ends = await this.#offsets.listOffsets({ topics, isolationLevel: IsolationLevels.READ_UNCOMMITTED })
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
    const all = Promise.all(waits).then(() => undefined)
    if (options.timeoutMs === undefined) return all
    let timer: NodeJS.Timeout | undefined
    const timeout = new Promise<void>(resolve => (timer = setTimeout(resolve, options.timeoutMs)))
    await Promise.race([all, timeout])
    clearTimeout(timer)
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
      state = { position: 0n, waiters: [] }
      this.#partitions.set(id, state)
    }
    return state
  }

  async #refreshMetadata(): Promise<ClusterMetadata> {
    this.#metadata = await this.#consumer.metadata({ topics: [...this.#options.topics], forceUpdate: true })
    return this.#metadata
  }

  async #run(): Promise<void> {
    let failures = 0
    while (this.#running) {
      try {
        const metadata = this.#metadata ?? (await this.#refreshMetadata())
        const stale = await this.#fetchOnce(metadata)
        if (stale) await this.#refreshMetadata()
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

  /** One round of fetches, one per leader broker, in parallel. Returns true if metadata looks stale. */
  async #fetchOnce(metadata: ClusterMetadata): Promise<boolean> {
    const byNode = new Map<number, Array<{ topic: string; topicId: string; partition: number; leaderEpoch: number }>>()
    for (const topic of this.#options.topics) {
      const info = metadata.topics.get(topic)
      if (!info) return true
      info.partitions.forEach((p, partition) => {
        if (this.#options.partitionFilter && !this.#options.partitionFilter(topic, partition, info.partitionsCount))
          return
        const list = byNode.get(p.leader) ?? []
        list.push({ topic, topicId: info.id, partition, leaderEpoch: p.leaderEpoch })
        byNode.set(p.leader, list)
      })
    }
    const results = await Promise.all(
      [...byNode].map(([node, parts]) =>
        this.#fetchFromNode(node, parts).then(
          r => r,
          () => true
        )
      )
    )
    return results.some(Boolean)
  }

  async #fetchFromNode(
    node: number,
    parts: Array<{ topic: string; topicId: string; partition: number; leaderEpoch: number }>
  ): Promise<boolean> {
    const byTopic = new Map<string, typeof parts>()
    for (const p of parts) byTopic.set(p.topicId, [...(byTopic.get(p.topicId) ?? []), p])
    const response = await this.#consumer.fetch({
      node,
      maxWaitTime: this.#options.maxWaitMs ?? 500,
      minBytes: 1,
      maxBytes: 16 * 1024 * 1024,
      isolationLevel: IsolationLevels.READ_COMMITTED,
      topics: [...byTopic].map(([topicId, list]) => ({
        topicId,
        partitions: list.map(p => ({
          partition: p.partition,
          fetchOffset: this.position(p.topic, p.partition),
          partitionMaxBytes: 4 * 1024 * 1024,
          currentLeaderEpoch: -1,
          lastFetchedEpoch: -1
        }))
      }))
    })
    let stale = false
    const topicNames = new Map(parts.map(p => [p.topicId, p.topic]))
    for (const topicResponse of response.responses) {
      const topic = topicNames.get(topicResponse.topicId)
      if (topic === undefined) continue
      for (const p of topicResponse.partitions) {
        if (p.errorCode !== 0) {
          stale = true
          continue
        }
        this.#apply(topic, p.partitionIndex, p.records ?? [], p.abortedTransactions ?? [], p.lastStableOffset)
      }
    }
    return stale
  }

  #apply(
    topic: string,
    partition: number,
    batches: ReadonlyArray<{
      firstOffset: bigint
      lastOffsetDelta: number
      attributes: number
      producerId: bigint
      firstTimestamp: bigint
      maxTimestamp: bigint
      records: ReadonlyArray<{
        offsetDelta: number
        timestampDelta: bigint
        key: Buffer | null
        value: Buffer | null
        headers: ReadonlyArray<[Buffer | null, Buffer | null]>
      }>
    }>,
    abortedTransactions: ReadonlyArray<{ producerId: bigint; firstOffset: bigint }>,
    lastStableOffset: bigint
  ): void {
    const state = this.#state(topic, partition)
    const pendingAborts = [...abortedTransactions].sort((a, b) => (a.firstOffset < b.firstOffset ? -1 : 1))
    const aborted = new Set<bigint>()
    for (const batch of batches) {
      const last = batch.firstOffset + BigInt(batch.lastOffsetDelta)
      if (last < state.position) continue
      while (pendingAborts.length > 0 && pendingAborts[0]!.firstOffset <= last) {
        aborted.add(pendingAborts.shift()!.producerId)
      }
      const transactional = (batch.attributes & TRANSACTIONAL) !== 0
      if ((batch.attributes & CONTROL) !== 0) {
        // A transaction marker ends the producer's aborted range.
        if (transactional) aborted.delete(batch.producerId)
      } else if (!(transactional && aborted.has(batch.producerId))) {
        for (const record of batch.records) {
          const offset = batch.firstOffset + BigInt(record.offsetDelta)
          if (offset < state.position) continue
          const headers = new Map<string, Buffer>()
          for (const [k, v] of record.headers) if (k && v) headers.set(k.toString(), v)
          this.#options.onRecord({
            topic,
            partition,
            offset,
            // On a LogAppendTime topic the broker's append time is the batch's maxTimestamp; the records'
            // own timestamps are the producer's clock.
            timestamp:
              (batch.attributes & LOG_APPEND_TIME) !== 0
                ? batch.maxTimestamp
                : batch.firstTimestamp + record.timestampDelta,
            key: record.key,
            value: record.value,
            headers
          })
        }
      }
      state.position = last + 1n
    }
    // Below the last stable offset there may be nothing left to return (only markers, or nothing at all):
    // the position is then the LSO itself.
    if (batches.length === 0 && lastStableOffset > state.position) state.position = lastStableOffset
    if (state.waiters.length > 0) {
      const ready = state.waiters.filter(w => w.offset <= state.position)
      state.waiters = state.waiters.filter(w => w.offset > state.position)
      for (const w of ready) w.resolve()
    }
  }
}

function delay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise(resolve => {
    const timer = setTimeout(resolve, ms)
    signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true })
  })
}
