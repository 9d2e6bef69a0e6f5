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
  head: Waiter | undefined
  tail: Waiter | undefined
}

/** At most `capacity` holders at once; the rest wait, fairly across keys. */
export class FairLimiter {
  readonly capacity: number
  #inUse = 0
  #waiting = 0
  // Insertion order is the round-robin order: a key served moves to the back.
  readonly #queues = new Map<string, Queue>()

  constructor(capacity: number) {
    if (!Number.isSafeInteger(capacity) || capacity < 1)
      throw new RangeError(`capacity ${capacity} is not a positive integer`)
    this.capacity = capacity
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
    if (this.#inUse >= this.capacity || this.#waiting > 0) return false
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
        queue = { head: undefined, tail: undefined }
        this.#queues.set(key, queue)
      }
      waiter.prev = queue.tail
      if (queue.tail === undefined) queue.head = waiter
      else queue.tail.next = waiter
      queue.tail = waiter
      this.#waiting++
    })
  }

  /** Gives a slot back: to the next key's oldest waiter, or to the pool. */
  release(): void {
    const next = this.#queues.keys().next()
    if (next.done === true) {
      if (this.#inUse === 0) throw new Error('FairLimiter.release without a matching acquire')
      this.#inUse--
      return
    }
    const queue = this.#queues.get(next.value) as Queue
    const waiter = queue.head as Waiter
    this.#unlink(waiter)
    // Served: the key goes to the back of the round.
    if (queue.head !== undefined) {
      this.#queues.delete(waiter.key)
      this.#queues.set(waiter.key, queue)
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
    if (queue.head === undefined) this.#queues.delete(waiter.key)
  }
}
