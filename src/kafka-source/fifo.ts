/** A FIFO that lets go of what it handed out (a head index, compacted once half of it is spent). */
export class Fifo<T> {
  #items: T[] = []
  #head = 0

  get size(): number {
    return this.#items.length - this.#head
  }

  push(item: T): void {
    this.#items.push(item)
  }

  /** The oldest item, left in place. */
  peek(): T | undefined {
    return this.#head < this.#items.length ? this.#items[this.#head] : undefined
  }

  shift(): T | undefined {
    if (this.#head >= this.#items.length) return undefined
    const item = this.#items[this.#head]!
    this.#head++
    if (this.#head >= this.#items.length) {
      this.#items = []
      this.#head = 0
    } else if (this.#head > 64 && this.#head * 2 > this.#items.length) {
      this.#items = this.#items.slice(this.#head)
      this.#head = 0
    }
    return item
  }
}
