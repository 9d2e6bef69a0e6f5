import { Fifo } from './fifo.ts'

/**
 * One partition's key scheduler for `ordering: key`: at most one record of a key is out (in delivery, or ready to
 * start) at a time, and the records of a busy key wait behind it in offset order without holding up other keys.
 * A record without a key (`undefined` here) waits for nothing. Pure: the delivery window feeds it the partition's
 * records in offset order and says when one is over.
 */
export class KeyLanes<T> {
  /** Keys with a record out, each with the records of that key waiting behind it, oldest first. */
  readonly #busy = new Map<string, Fifo<T>>()
  /** Records whose key turned free while they waited: they hold their key and start before any newer record. */
  #ready = new Fifo<T>()
  #waiting = 0

  /** Records taken in but not handed out yet (waiting behind their key, or ready). */
  get waiting(): number {
    return this.#waiting
  }

  /** Keys with a record out. */
  get busyKeys(): number {
    return this.#busy.size
  }

  /**
   * Takes in the partition's next record: true if it may start now (its key is now busy), false if it waits
   * behind an earlier record of its key.
   */
  admit(key: string | undefined, item: T): boolean {
    if (key === undefined) return true
    const behind = this.#busy.get(key)
    if (behind === undefined) {
      this.#busy.set(key, new Fifo())
      return true
    }
    behind.push(item)
    this.#waiting++
    return false
  }

  /** The oldest record whose key turned free, to start now (it already holds its key). */
  nextReady(): T | undefined {
    const item = this.#ready.shift()
    if (item !== undefined) this.#waiting--
    return item
  }

  /** The record of `key` that was out is over: the next record of that key, if any, becomes ready. */
  done(key: string | undefined): void {
    if (key === undefined) return
    const behind = this.#busy.get(key)
    if (behind === undefined) return
    const next = behind.shift()
    if (next === undefined) this.#busy.delete(key)
    else this.#ready.push(next)
  }

  /** Forgets everything (the partition's unstarted records are let go): returns how many records waited. */
  clear(): number {
    const dropped = this.#waiting
    this.#busy.clear()
    this.#ready = new Fifo()
    this.#waiting = 0
    return dropped
  }
}

/**
 * A record's key as the scheduler compares it: its bytes, one character each (latin1 maps bytes to characters one
 * to one). Null — no key — orders with nothing; an empty key is a key.
 */
export function laneKeyOf(key: Buffer | null): string | undefined {
  return key === null ? undefined : key.toString('latin1')
}
