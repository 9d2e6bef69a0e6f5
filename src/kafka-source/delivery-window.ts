import { nextBatch, recordBytes } from './batch-builder.ts'
import { deliverBatch } from './batch-delivery.ts'
import { DELIVER_ERROR_BACKOFF_MS } from './defaults.ts'
import { KeyBatches } from './key-batches.ts'
import type { KeyBatchItems } from './key-batches.ts'
import { laneKeyOf } from './key-lanes.ts'
import type { MemberContext } from './member-context.ts'
import type { PartitionRun, QueuedRecord } from './partition-run.ts'
import type { Outcome } from './types.ts'
import { sleep } from './wake.ts'

/** How KeyBatches reads a queued record. */
const KEY_BATCH_ITEMS: KeyBatchItems<QueuedRecord> = {
  key: item => laneKeyOf(item.record.key),
  bytes: item => recordBytes(item.record),
  offset: item => item.record.offset,
  fetchedAt: item => item.record.fetchedAt
}

/**
 * A member's delivery window: at most `maxInFlight` records in delivery, taken round-robin from the owned
 * partitions' queues, each delivered until it is handled or its partition leaves.
 */
export class DeliveryWindow {
  readonly #ctx: MemberContext
  #inFlight = 0
  #queued = 0
  #cursor = 0
  #deliverErrors = 0
  readonly #outcomes: Record<Outcome, number> = { delivered: 0, 'dead-lettered': 0, dropped: 0 }
  #drained: Array<() => void> = []
  /** Batching: the pump a batch not full waits for (when it is due to go as it is). */
  #batchTimer: NodeJS.Timeout | undefined
  #batchDue = Number.POSITIVE_INFINITY

  constructor(ctx: MemberContext) {
    this.#ctx = ctx
  }

  get inFlight(): number {
    return this.#inFlight
  }

  get queued(): number {
    return this.#queued
  }

  get deliverErrors(): number {
    return this.#deliverErrors
  }

  outcomes(): Record<Outcome, number> {
    return { ...this.#outcomes }
  }

  /** Records fetched into a partition's queue. */
  queuedMore(count: number): void {
    this.#queued += count
  }

  /** Lets go of a partition's records not started yet (they are fetched again by whoever owns it next). */
  dropQueue(run: PartitionRun): void {
    this.#queued -= run.queue.length - run.head + run.lanes.clear() + (run.keyBatches?.clear() ?? 0)
    run.queue = []
    run.head = 0
  }

  /**
   * Starts deliveries while the window has room, round-robin over partitions. Ordered: one record in flight
   * per partition. Unordered: a partition holds at most maxInFlight − (partitions − 1) slots, so however
   * slow its records are, every other partition keeps a slot. Key: as unordered, but a record whose key has one
   * out waits behind it (see KeyLanes), and the partition's next records go on. Batches: a batch takes one slot;
   * with key, a batch holds its keys while it is out (see KeyBatches).
   */
  pump(): void {
    if (this.#ctx.stopping()) return
    const max = this.#ctx.options.maxInFlight
    const runs = [...this.#ctx.runs.values()]
    if (runs.length === 0) return
    const ordering = this.#ctx.options.source.ordering
    const cap = ordering === 'ordered' ? 1 : Math.max(1, max - (runs.length - 1))
    const batching = this.#ctx.options.batching !== undefined
    const startNext = batching
      ? ordering === 'key'
        ? (run: PartitionRun) => this.#startKeyBatch(run)
        : (run: PartitionRun) => this.#startBatch(run)
      : ordering === 'key'
        ? (run: PartitionRun) => this.#startByKey(run)
        : (run: PartitionRun) => this.#startHead(run)
    let started = true
    while (started && this.#inFlight < max) {
      started = false
      for (let i = 0; i < runs.length && this.#inFlight < max; i++) {
        const run = runs[(this.#cursor + i) % runs.length]!
        if (run.inFlight < cap && startNext(run)) started = true
      }
      this.#cursor = (this.#cursor + 1) % runs.length
    }
  }

  /** Resolves once nothing is in delivery, or after `ms`. */
  waitForInFlight(ms: number): Promise<void> {
    if (this.#inFlight === 0) return Promise.resolve()
    return new Promise(resolve => {
      const timer = setTimeout(resolve, ms)
      this.#drained.push(() => {
        clearTimeout(timer)
        resolve()
      })
    })
  }

  /** With batching: starts the partition's next batch once it is closed (false: none queued, or it waits for more). */
  #startBatch(run: PartitionRun): boolean {
    const batching = this.#ctx.options.batching
    if (batching === undefined || run.head >= run.queue.length) return false
    const now = performance.now()
    const next = nextBatch(run.queue, run.head, batching.limits, now)
    if (next.kind === 'wait') {
      this.#pumpAt(next.at, now)
      return false
    }
    const items = run.queue.slice(run.head, run.head + next.count) as QueuedRecord[]
    run.queue.fill(undefined, run.head, run.head + next.count)
    run.head += next.count
    this.#sendBatch(run, items, () => this.#ended(run))
    return true
  }

  /**
   * Batching with `ordering: key`: fills the partition's batch being built (from keys a batch freed, then the
   * queue) and starts it once it is due; it holds its keys until it is over, so their later records wait.
   */
  #startKeyBatch(run: PartitionRun): boolean {
    const batching = this.#ctx.options.batching
    if (batching === undefined) return false
    const lanes = (run.keyBatches ??= new KeyBatches(batching.limits, KEY_BATCH_ITEMS))
    run.head = lanes.fill(run.queue, run.head)
    const now = performance.now()
    const next = lanes.decide(now, batching.limits.maxWaitMs)
    if (next.kind === 'empty') return false
    if (next.kind === 'wait') {
      this.#pumpAt(next.at, now)
      return false
    }
    const batch = lanes.take()
    this.#sendBatch(run, batch.items, () => {
      // A partition that left has its lanes cleared: this frees nothing there.
      lanes.end(batch)
      this.#ended(run)
    })
    return true
  }

  #sendBatch(run: PartitionRun, items: readonly QueuedRecord[], ended: () => void): void {
    const batching = this.#ctx.options.batching!
    this.#queued -= items.length
    // A batch takes one slot: maxInFlight counts requests in flight, and ordered keeps one batch per partition.
    run.inFlight++
    this.#inFlight++
    deliverBatch(this.#ctx, run, items, batching.deliver, {
      handled: outcome => (this.#outcomes[outcome] = (this.#outcomes[outcome] ?? 0) + 1),
      deliverError: () => this.#deliverErrors++,
      ended
    })
  }

  #pumpAt(at: number, now: number): void {
    if (at >= this.#batchDue) return
    clearTimeout(this.#batchTimer)
    this.#batchDue = at
    this.#batchTimer = setTimeout(() => {
      this.#batchDue = Number.POSITIVE_INFINITY
      this.pump()
    }, at - now)
    this.#batchTimer.unref()
  }

  /** Starts the partition's next queued record, if any. */
  #startHead(run: PartitionRun): boolean {
    const item = this.#takeHead(run)
    if (item === undefined) return false
    this.#start(run, item)
    return true
  }

  /**
   * `ordering: key`: starts the oldest record whose key turned free, else the first queued record whose key is
   * free; the queued records of busy keys met on the way wait behind their key (still counted as queued).
   */
  #startByKey(run: PartitionRun): boolean {
    let item = run.lanes.nextReady()
    while (item === undefined) {
      const next = this.#takeHead(run)
      if (next === undefined) return false
      if (run.lanes.admit(laneKeyOf(next.record.key), next)) item = next
    }
    this.#start(run, item)
    return true
  }

  #takeHead(run: PartitionRun): QueuedRecord | undefined {
    if (run.head >= run.queue.length) return undefined
    const item = run.queue[run.head]!
    run.queue[run.head] = undefined
    run.head++
    return item
  }

  #start(run: PartitionRun, item: QueuedRecord): void {
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
      this.#ended(run, item)
      return
    }
    let delivering: Promise<Outcome>
    try {
      delivering = this.#ctx.options.deliver(item.record, signal, run.wire.signal)
    } catch (error) {
      delivering = Promise.reject(error)
    }
    delivering.then(
      outcome => {
        this.#outcomes[outcome] = (this.#outcomes[outcome] ?? 0) + 1
        item.tracker.handled(item.entry)
        this.#ended(run, item)
      },
      error => void this.#retry(run, item, backoff, error)
    )
  }

  async #retry(run: PartitionRun, item: QueuedRecord, backoff: number, error: unknown): Promise<void> {
    const signal = run.stop.signal
    if (!signal.aborted) {
      this.#deliverErrors++
      this.#ctx.options.log(
        'warn',
        'deliver failed; retrying the record',
        this.#ctx.fields({ error, topic: run.topic, partition: run.partition, offset: String(item.record.offset) })
      )
      await sleep(backoff, signal)
    }
    this.#deliver(run, item, Math.min(backoff * 2, DELIVER_ERROR_BACKOFF_MS.max))
  }

  /** A record's delivery is over (handled, or its partition left): its slot goes to the next record. */
  #ended(run: PartitionRun, item?: QueuedRecord): void {
    // A partition that left has its lanes cleared: this frees nothing there. (A batch passes no item: no lanes.)
    if (item !== undefined && this.#ctx.options.source.ordering === 'key') run.lanes.done(laneKeyOf(item.record.key))
    run.inFlight--
    this.#inFlight--
    if (this.#inFlight === 0) for (const resolve of this.#drained.splice(0)) resolve()
    this.pump()
    this.#ctx.wake.notify()
  }
}
