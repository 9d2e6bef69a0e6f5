/** One fetched record's place in its partition's commit order. */
export interface TrackedOffset {
  readonly offset: bigint
  handled: boolean
}

/**
 * The fetched offsets of one partition, in order, and which are handled. The committable offset is the first
 * fetched offset not yet handled, or the fetch position once all are: never `offset + 1` of a handled record,
 * because offsets have gaps (compaction, transaction markers, aborted transactions) and the position after a
 * fetch already lies past them.
 */
export class OffsetTracker {
  #entries: TrackedOffset[] = []
  #head = 0
  #position: bigint

  /** `position`: where fetching starts (the committed offset, or the initial offset's). */
  constructor(position: bigint) {
    this.#position = position
  }

  /** The next offset to fetch. */
  get position(): bigint {
    return this.#position
  }

  /** Fetched records not yet committable: from the first unhandled one to the position. */
  get outstanding(): number {
    return this.#entries.length - this.#head
  }

  /** Records a fetched offset (strictly increasing, below the new position). */
  fetched(offset: bigint): TrackedOffset {
    if (offset < this.#position) throw new Error(`offset ${offset} fetched again below position ${this.#position}`)
    const last = this.#entries[this.#entries.length - 1]
    if (last !== undefined && offset <= last.offset) throw new Error(`offset ${offset} fetched out of order`)
    const entry: TrackedOffset = { offset, handled: false }
    this.#entries.push(entry)
    this.#position = offset + 1n
    return entry
  }

  /** Moves the position past what a fetch covered, records or not (markers, aborted or compacted ranges). */
  advanceTo(position: bigint): void {
    if (position > this.#position) this.#position = position
  }

  handled(entry: TrackedOffset): void {
    entry.handled = true
    this.#compact()
  }

  /** The offset a commit may name: every fetched record before it is handled. */
  committable(): bigint {
    return this.#entries[this.#head]?.offset ?? this.#position
  }

  #compact(): void {
    while (this.#head < this.#entries.length && this.#entries[this.#head]!.handled) this.#head++
    if (this.#head === this.#entries.length) {
      this.#entries = []
      this.#head = 0
    } else if (this.#head > 1024 && this.#head * 2 > this.#entries.length) {
      this.#entries = this.#entries.slice(this.#head)
      this.#head = 0
    }
  }
}
