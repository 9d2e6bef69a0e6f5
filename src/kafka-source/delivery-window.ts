import { nextBatch } from './batch-builder.ts'
import { deliverBatch } from './batch-delivery.ts'
import { DELIVER_ERROR_BACKOFF_MS } from './defaults.ts'
import type { MemberContext } from './member-context.ts'
import type { PartitionRun, QueuedRecord } from './partition-run.ts'
import type { Outcome } from './types.ts'
import { sleep } from './wake.ts'

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
    this.#queued -= run.queue.length - run.head
    run.queue = []
    run.head = 0
  }

  /**
   * Starts deliveries while the window has room, round-robin over partitions. Ordered: one record in flight
   * per partition. Unordered: a partition holds at most maxInFlight − (partitions − 1) slots, so however
   * slow its records are, every other partition keeps a slot.
   */
  pump(): void {
    if (this.#ctx.stopping()) return
    const max = this.#ctx.options.maxInFlight
    const runs = [...this.#ctx.runs.values()]
    if (runs.length === 0) return
    const cap = this.#ctx.options.source.ordering === 'ordered' ? 1 : Math.max(1, max - (runs.length - 1))
    let started = true
    while (started && this.#inFlight < max) {
      started = false
      for (let i = 0; i < runs.length && this.#inFlight < max; i++) {
        const run = runs[(this.#cursor + i) % runs.length]!
        if (run.inFlight < cap && run.head < run.queue.length && this.#startNext(run)) started = true
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

  // One record, or with batching the partition's next batch once it is closed (false: it waits for more).
  #startNext(run: PartitionRun): boolean {
    const batching = this.#ctx.options.batching
    if (batching === undefined) {
      this.#start(run)
      return true
    }
    const now = performance.now()
    const next = nextBatch(run.queue, run.head, batching.limits, now)
    if (next.kind === 'wait') {
      this.#pumpAt(next.at, now)
      return false
    }
    const items = run.queue.slice(run.head, run.head + next.count) as QueuedRecord[]
    run.queue.fill(undefined, run.head, run.head + next.count)
    run.head += next.count
    this.#queued -= next.count
    // A batch takes one slot: maxInFlight counts requests in flight, and ordered keeps one batch per partition.
    run.inFlight++
    this.#inFlight++
    deliverBatch(this.#ctx, run, items, batching.deliver, {
      handled: outcome => (this.#outcomes[outcome] = (this.#outcomes[outcome] ?? 0) + 1),
      deliverError: () => this.#deliverErrors++,
      ended: () => this.#ended(run)
    })
    return true
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
      delivering = this.#ctx.options.deliver(item.record, signal, run.wire.signal)
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
  #ended(run: PartitionRun): void {
    run.inFlight--
    this.#inFlight--
    if (this.#inFlight === 0) for (const resolve of this.#drained.splice(0)) resolve()
    this.pump()
    this.#ctx.wake.notify()
  }
}
