/**
 * The one timer structure of a dispatcher's schedules: (key, time) entries with removal and update by key, popped
 * earliest first. Entries are grouped by time — a binary min-heap of the distinct times, and the keys due at each
 * time in a bucket — because schedules share ticks: 100,000 sources on `* * * * *` are one bucket, and popping
 * each of them costs O(1), not a heap sift. The earliest time is what the single setTimeout waits for.
 */
export class TickHeap {
  // Min-heap of times that have (or had) a bucket; a time whose bucket emptied stays until it surfaces.
  readonly #times: number[] = []
  readonly #buckets = new Map<number, Set<string>>()
  readonly #timeOf = new Map<string, number>()
  // The bucket being popped and the iterator that walks it (it skips keys deleted meanwhile, visits keys added).
  #draining: Set<string> | undefined
  #drain: Iterator<string> | undefined

  get size(): number {
    return this.#timeOf.size
  }

  /** The earliest time, or undefined when empty. */
  peekTime(): number | undefined {
    this.#settleTop()
    return this.#times[0]
  }

  has(key: string): boolean {
    return this.#timeOf.has(key)
  }

  timeOf(key: string): number | undefined {
    return this.#timeOf.get(key)
  }

  /** Adds `key` at `time`, or moves it there if present. */
  set(key: string, time: number): void {
    const old = this.#timeOf.get(key)
    if (old === time) return
    if (old !== undefined) this.#unbucket(key, old)
    this.#timeOf.set(key, time)
    let bucket = this.#buckets.get(time)
    if (bucket === undefined) {
      bucket = new Set()
      this.#buckets.set(time, bucket)
      this.#push(time)
    }
    bucket.add(key)
  }

  delete(key: string): boolean {
    const time = this.#timeOf.get(key)
    if (time === undefined) return false
    this.#timeOf.delete(key)
    this.#unbucket(key, time)
    return true
  }

  /** Removes and returns the earliest entry if its time is at or before `now`. */
  popDue(now: number): { key: string; time: number } | undefined {
    this.#settleTop()
    const time = this.#times[0]
    if (time === undefined || time > now) return undefined
    const bucket = this.#buckets.get(time) as Set<string>
    if (this.#draining !== bucket) {
      this.#draining = bucket
      this.#drain = bucket.values()
    }
    const key = (this.#drain as Iterator<string>).next().value as string
    this.#timeOf.delete(key)
    this.#unbucket(key, time)
    return { key, time }
  }

  #unbucket(key: string, time: number): void {
    const bucket = this.#buckets.get(time) as Set<string>
    bucket.delete(key)
    if (bucket.size > 0) return
    this.#buckets.delete(time)
    if (this.#draining === bucket) {
      this.#draining = undefined
      this.#drain = undefined
    }
    // Its time stays in the heap until it surfaces; rebuild when such leftovers outnumber the live times.
    if (this.#times.length > 2 * this.#buckets.size + 64) this.#rebuild()
  }

  // Drops leftover times (whose bucket emptied) from the top.
  #settleTop(): void {
    while (this.#times.length > 0 && !this.#buckets.has(this.#times[0] as number)) this.#pop()
  }

  #rebuild(): void {
    const times = [...this.#buckets.keys()].sort((a, b) => a - b)
    this.#times.length = 0
    for (const time of times) this.#times.push(time) // sorted is a valid heap
  }

  #push(time: number): void {
    const times = this.#times
    let i = times.length
    times.push(time)
    while (i > 0) {
      const parent = (i - 1) >> 1
      if ((times[parent] as number) <= time) break
      times[i] = times[parent] as number
      i = parent
    }
    times[i] = time
  }

  #pop(): void {
    const times = this.#times
    const last = times.pop() as number
    const n = times.length
    if (n === 0) return
    let i = 0
    for (;;) {
      const left = 2 * i + 1
      if (left >= n) break
      const right = left + 1
      const child = right < n && (times[right] as number) < (times[left] as number) ? right : left
      if ((times[child] as number) >= last) break
      times[i] = times[child] as number
      i = child
    }
    times[i] = last
  }
}
