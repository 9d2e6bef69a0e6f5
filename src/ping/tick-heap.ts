/**
 * A binary min-heap of (key, time) with removal and update by key: the one timer structure of a dispatcher's
 * schedules. The earliest entry is what its single setTimeout waits for.
 */
export class TickHeap {
  readonly #keys: string[] = []
  readonly #times: number[] = []
  readonly #index = new Map<string, number>()

  get size(): number {
    return this.#keys.length
  }

  /** The earliest time, or undefined when empty. */
  peekTime(): number | undefined {
    return this.#times[0]
  }

  has(key: string): boolean {
    return this.#index.has(key)
  }

  timeOf(key: string): number | undefined {
    const i = this.#index.get(key)
    return i === undefined ? undefined : this.#times[i]
  }

  /** Adds `key` at `time`, or moves it there if present. */
  set(key: string, time: number): void {
    const i = this.#index.get(key)
    if (i === undefined) {
      this.#keys.push(key)
      this.#times.push(time)
      this.#index.set(key, this.#keys.length - 1)
      this.#up(this.#keys.length - 1)
      return
    }
    const old = this.#times[i] as number
    this.#times[i] = time
    if (time < old) this.#up(i)
    else this.#down(i)
  }

  delete(key: string): boolean {
    const i = this.#index.get(key)
    if (i === undefined) return false
    this.#removeAt(i)
    return true
  }

  /** Removes and returns the earliest entry if its time is at or before `now`. */
  popDue(now: number): { key: string; time: number } | undefined {
    const time = this.#times[0]
    if (time === undefined || time > now) return undefined
    const key = this.#keys[0] as string
    this.#removeAt(0)
    return { key, time }
  }

  #removeAt(i: number): void {
    const last = this.#keys.length - 1
    this.#index.delete(this.#keys[i] as string)
    if (i !== last) {
      this.#keys[i] = this.#keys[last] as string
      this.#times[i] = this.#times[last] as number
      this.#index.set(this.#keys[i] as string, i)
    }
    this.#keys.pop()
    this.#times.pop()
    if (i < this.#keys.length) {
      this.#up(i)
      this.#down(i)
    }
  }

  #up(i: number): void {
    while (i > 0) {
      const parent = (i - 1) >> 1
      if ((this.#times[parent] as number) <= (this.#times[i] as number)) return
      this.#swap(i, parent)
      i = parent
    }
  }

  #down(i: number): void {
    const n = this.#keys.length
    for (;;) {
      const left = 2 * i + 1
      const right = left + 1
      let smallest = i
      if (left < n && (this.#times[left] as number) < (this.#times[smallest] as number)) smallest = left
      if (right < n && (this.#times[right] as number) < (this.#times[smallest] as number)) smallest = right
      if (smallest === i) return
      this.#swap(i, smallest)
      i = smallest
    }
  }

  #swap(a: number, b: number): void {
    const key = this.#keys[a] as string
    const time = this.#times[a] as number
    this.#keys[a] = this.#keys[b] as string
    this.#times[a] = this.#times[b] as number
    this.#keys[b] = key
    this.#times[b] = time
    this.#index.set(this.#keys[a] as string, a)
    this.#index.set(key, b)
  }
}
