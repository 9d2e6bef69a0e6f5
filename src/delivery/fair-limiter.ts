import { onAbort } from './abort-fanout.ts'

// A counting semaphore whose waiters queue per key (per source) and are served round-robin across keys, FIFO
// within one: a source with a thousand queued deliveries delays another source by at most one turn per slot.

interface Waiter {
  readonly key: string
  readonly resolve: () => void
  unsubscribe: (() => void) | undefined
  prev: Waiter | undefined
  next: Waiter | undefined
}

interface Queue {
  readonly key: string
  head: Waiter | undefined
  tail: Waiter | undefined
  // Neighbours in the round (keys with waiters, in the order they are served).
  before: Queue | undefined
  after: Queue | undefined
}

/** At most `limit` holders at once (at most `capacity`; the limit may move below it); the rest wait, fairly across keys. */
export class FairLimiter {
  readonly capacity: number
  #limit: number
  #inUse = 0
  #waiting = 0
  readonly #queues = new Map<string, Queue>()
  // The round: a list of the queues with waiters; the first is served next and then goes to the back. A list of
  // its own, not a Map's insertion order: a Map re-ordered on every release leaves deleted entries that every
  // `keys().next()` walks past, which made a long burst's releases slower and slower.
  #first: Queue | undefined
  #last: Queue | undefined

  constructor(capacity: number) {
    if (!Number.isSafeInteger(capacity) || capacity < 1)
      throw new RangeError(`capacity ${capacity} is not a positive integer`)
    this.capacity = capacity
    this.#limit = capacity
  }

  /** Holders allowed now. */
  get limit(): number {
    return this.#limit
  }

  /** Allows `limit` holders (clamped to 1..capacity); raising it hands the new slots to waiters at once. */
  setLimit(limit: number): void {
    this.#limit = Math.max(1, Math.min(this.capacity, Math.floor(limit)))
    while (this.#inUse < this.#limit && this.#first !== undefined) {
      this.#inUse++
      this.#serve(this.#first)
    }
  }

  /** Slots held now. */
  get inUse(): number {
    return this.#inUse
  }

  /** Acquisitions waiting for a slot. */
  get waiting(): number {
    return this.#waiting
  }

  /** A slot now, when one is free and nobody waits: true if taken (release it), false to wait with `acquire`. */
  tryAcquire(): boolean {
    if (this.#inUse >= this.#limit || this.#waiting > 0) return false
    this.#inUse++
    return true
  }

  /** A slot for `key`: at once when one is free and nobody waits, else in its turn. Rejects when `signal` aborts. */
  acquire(key: string, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted === true) return Promise.reject(signal.reason)
    if (this.tryAcquire()) return Promise.resolve()
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = { key, resolve, unsubscribe: undefined, prev: undefined, next: undefined }
      if (signal !== undefined) {
        waiter.unsubscribe = onAbort(signal, () => {
          this.#unlink(waiter)
          reject(signal.reason)
        })
      }
      let queue = this.#queues.get(key)
      if (queue === undefined) {
        queue = { key, head: undefined, tail: undefined, before: undefined, after: undefined }
        this.#queues.set(key, queue)
        this.#append(queue)
      }
      waiter.prev = queue.tail
      if (queue.tail === undefined) queue.head = waiter
      else queue.tail.next = waiter
      queue.tail = waiter
      this.#waiting++
    })
  }

  /** Gives a slot back: to the next key's oldest waiter, or to the pool (always, while over a lowered limit). */
  release(): void {
    const queue = this.#first
    if (queue === undefined || this.#inUse > this.#limit) {
      if (this.#inUse === 0) throw new Error('FairLimiter.release without a matching acquire')
      this.#inUse--
      return
    }
    this.#serve(queue)
  }

  // Hands a held slot to `queue`'s oldest waiter.
  #serve(queue: Queue): void {
    const waiter = queue.head as Waiter
    this.#unlink(waiter)
    // Served: the key goes to the back of the round.
    if (queue.head !== undefined && queue !== this.#last) {
      this.#detach(queue)
      this.#append(queue)
    }
    waiter.unsubscribe?.()
    waiter.resolve()
  }

  #unlink(waiter: Waiter): void {
    const queue = this.#queues.get(waiter.key)
    if (queue === undefined) return
    if (waiter.prev === undefined) queue.head = waiter.next
    else waiter.prev.next = waiter.next
    if (waiter.next === undefined) queue.tail = waiter.prev
    else waiter.next.prev = waiter.prev
    waiter.prev = undefined
    waiter.next = undefined
    this.#waiting--
    if (queue.head === undefined) {
      this.#queues.delete(waiter.key)
      this.#detach(queue)
    }
  }

  #append(queue: Queue): void {
    queue.before = this.#last
    queue.after = undefined
    if (this.#last === undefined) this.#first = queue
    else this.#last.after = queue
    this.#last = queue
  }

  #detach(queue: Queue): void {
    if (queue.before === undefined) this.#first = queue.after
    else queue.before.after = queue.after
    if (queue.after === undefined) this.#last = queue.before
    else queue.after.before = queue.before
    queue.before = undefined
    queue.after = undefined
  }
}
