import { Fifo } from './fifo.ts'

/** What the key batcher reads of a queued record. */
export interface KeyBatchItems<T> {
  /** Its key as the scheduler compares it (see `laneKeyOf`); undefined: no key, it waits for nothing. */
  key(item: T): string | undefined
  /** What it weighs against `maxBytes`. */
  bytes(item: T): number
  offset(item: T): bigint
  /** When it was fetched (`performance.now()`); undefined: a batch holding it is due at once. */
  fetchedAt(item: T): number | undefined
}

/** A batch: records of one partition in offset order, holding their keys until it is over (see `KeyBatches.end`). */
export interface KeyBatch<T> {
  readonly items: readonly T[]
}

/** Whether the batch being built should go now, wait for more records until `at`, or is empty. */
export type KeyBatchDecision =
  { readonly kind: 'send' } | { readonly kind: 'wait'; readonly at: number } | { readonly kind: 'empty' }

/** A batch, built or out: its records and the keys it holds. */
class Unit<T> implements KeyBatch<T> {
  readonly items: T[] = []
  readonly keys: string[] = []
  bytes = 0
  /** Fetch time of its oldest record (−∞: one had none, so it is due at once). */
  oldest = Number.POSITIVE_INFINITY
  full = false
  /** False once a record went in below the one before it (a key's waiting records, then another key's). */
  inOrder = true
  last = -1n
}

/** One key's lane: the unit holding it (the batch being built or one out), and its records not sent yet. */
interface Lane<T> {
  holder: Unit<T> | undefined
  waiting: Fifo<T> | undefined
}

/**
 * One partition's batch builder for `ordering: key` with batched delivery. A batch holds the keys of its records;
 * while a batch holding a key is out, that key's later records wait (in no other batch) until the batch is over
 * — delivered, dead-lettered or dropped, through its retries —, while records of other keys go on in other
 * batches. Records of one key may share a batch, in offset order; a record without a key waits for nothing.
 *
 * Building takes, first, the waiting records of keys freed by a batch's end (oldest freed key first), then the
 * partition's queue from its head in offset order: a record joins the batch being built unless its key is held by
 * a batch out, or still has records waiting (then it waits behind them). A batch is full at `maxEvents` records,
 * or before the record that would take it past `maxBytes` (a bigger record goes alone). Pure: the delivery window
 * feeds it the queue and says when a batch is over.
 */
export class KeyBatches<T> {
  readonly #limits: { readonly maxEvents: number; readonly maxBytes: number }
  readonly #of: KeyBatchItems<T>
  /** Keys held by a batch or with records waiting. */
  readonly #lanes = new Map<string, Lane<T>>()
  /** Keys no batch holds whose records wait, in the order they were freed. */
  #ready = new Fifo<string>()
  #open: Unit<T> = new Unit()
  #waiting = 0

  constructor(limits: { readonly maxEvents: number; readonly maxBytes: number }, of: KeyBatchItems<T>) {
    this.#limits = limits
    this.#of = of
  }

  /** Records taken from the queue that wait behind their key (not in the batch being built). */
  get waiting(): number {
    return this.#waiting
  }

  /** Keys held by a batch (being built or out) or with records waiting. */
  get busyKeys(): number {
    return this.#lanes.size
  }

  /** Records in the batch being built. */
  get building(): number {
    return this.#open.items.length
  }

  /**
   * Adds to the batch being built, first from freed keys' waiting records, then from `queue[head…]` (a record
   * taken from the queue is set to undefined there). Returns the new head: the queue's records before it are
   * in the batch or wait behind their key.
   */
  fill(queue: Array<T | undefined>, head: number): number {
    const open = this.#open
    while (!open.full && this.#ready.size > 0) {
      const key = this.#ready.peek()!
      const lane = this.#lanes.get(key)!
      const waiting = lane.waiting!
      let taken = 0
      for (let item = waiting.peek(); item !== undefined && this.#add(open, item); item = waiting.peek()) {
        waiting.shift()
        this.#waiting--
        taken++
      }
      if (taken === 0) break
      this.#ready.shift()
      lane.holder = open
      open.keys.push(key)
      if (waiting.size === 0) lane.waiting = undefined
    }
    let at = head
    for (; !open.full && at < queue.length; at++) {
      const item = queue[at] as T
      const key = this.#of.key(item)
      const lane = key === undefined ? undefined : this.#lanes.get(key)
      if (lane !== undefined && (lane.holder !== open || lane.waiting !== undefined)) {
        // Its key is held by a batch out, or has older records waiting: it waits behind them.
        ;(lane.waiting ??= new Fifo()).push(item)
        this.#waiting++
      } else if (!this.#add(open, item)) {
        break
      } else if (key !== undefined && lane === undefined) {
        this.#lanes.set(key, { holder: open, waiting: undefined })
        open.keys.push(key)
      }
      queue[at] = undefined
    }
    return at
  }

  /** Whether the batch being built should go at `now`, or wait until `maxWaitMs` after its oldest record's fetch. */
  decide(now: number, maxWaitMs: number): KeyBatchDecision {
    const open = this.#open
    if (open.items.length === 0) return { kind: 'empty' }
    if (open.full) return { kind: 'send' }
    const at = open.oldest + maxWaitMs
    return at <= now ? { kind: 'send' } : { kind: 'wait', at }
  }

  /** Hands out the batch being built (not empty): it holds its keys until `end`. */
  take(): KeyBatch<T> {
    const unit = this.#open
    this.#open = new Unit()
    if (!unit.inOrder) {
      const of = this.#of
      unit.items.sort((a, b) => (of.offset(a) < of.offset(b) ? -1 : 1))
    }
    return unit
  }

  /** A batch handed out is over: its keys are free, and those with records waiting are ready, in this order. */
  end(batch: KeyBatch<T>): void {
    for (const key of (batch as Unit<T>).keys) {
      const lane = this.#lanes.get(key)
      // Not its holder: the partition was cleared since.
      if (lane === undefined || lane.holder !== batch) continue
      lane.holder = undefined
      if (lane.waiting === undefined) this.#lanes.delete(key)
      else this.#ready.push(key)
    }
  }

  /** Forgets everything (the partition's unsent records are let go): returns how many records it held (waiting, or in the batch being built). */
  clear(): number {
    const dropped = this.#waiting + this.#open.items.length
    this.#lanes.clear()
    this.#ready = new Fifo()
    this.#open = new Unit()
    this.#waiting = 0
    return dropped
  }

  /** Adds `item` to `unit` if it fits; otherwise the unit is full. */
  #add(unit: Unit<T>, item: T): boolean {
    if (unit.full) return false
    const size = this.#of.bytes(item)
    const count = unit.items.length
    if (count > 0 && unit.bytes + size > this.#limits.maxBytes) {
      unit.full = true
      return false
    }
    unit.items.push(item)
    unit.bytes += size
    if (count + 1 >= this.#limits.maxEvents || unit.bytes >= this.#limits.maxBytes) unit.full = true
    const offset = this.#of.offset(item)
    if (offset < unit.last) unit.inOrder = false
    unit.last = offset
    const fetchedAt = this.#of.fetchedAt(item) ?? Number.NEGATIVE_INFINITY
    if (fetchedAt < unit.oldest) unit.oldest = fetchedAt
    return true
  }
}
