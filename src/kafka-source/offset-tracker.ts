/** One fetched record's place in its partition's commit order. */
export interface TrackedOffset {
  readonly offset: bigint
  /** Given to `deliver` (in this assignment of the partition). */
  handed: boolean
  handled: boolean
}

/** Why a commit was refused (see `OffsetTracker.authorize`). */
export const CommitRefusals = {
  /** The offset passes a record not handled yet (or one never fetched). */
  PAST_UNHANDLED: 'past-unhandled',
  /** The partition's assignment is over and its hand-over committed: whatever comes later is not its to write. */
  RELEASED: 'released',
  /** The offset is below one this assignment already committed. */
  BACKWARDS: 'backwards'
} as const
export type CommitRefusal = (typeof CommitRefusals)[keyof typeof CommitRefusals]

export type CommitVerdict =
  | { readonly kind: 'commit' }
  | { readonly kind: 'unchanged' }
  | { readonly kind: 'refused'; readonly reason: CommitRefusal; readonly limit: bigint }

/**
 * The fetched offsets of one partition in one assignment, in order, and which are handed to `deliver` and
 * handled: the one place that says what a member may commit for it. The committable offset is the first fetched
 * offset not yet handled, or the fetch position once all are — never `offset + 1` of a handled record, because
 * offsets have gaps (compaction, transaction markers, aborted transactions) and the position after a fetch
 * already lies past them. A record counts as handled only once it was handed to `deliver` and its outcome came
 * back; anything else asked of `authorize` is refused.
 */
export class OffsetTracker {
  #entries: TrackedOffset[] = []
  #head = 0
  #position: bigint
  #committed: bigint | undefined
  #released = false

  /** `position`: where fetching starts (the committed offset, or the initial offset's). */
  constructor(position: bigint, committed?: bigint) {
    this.#position = position
    this.#committed = committed
  }

  /** The next offset to fetch. */
  get position(): bigint {
    return this.#position
  }

  /** The offset this assignment last committed (or found committed when it started). */
  get committed(): bigint | undefined {
    return this.#committed
  }

  /** Fetched records not yet committable: from the first unhandled one to the position. */
  get outstanding(): number {
    return this.#entries.length - this.#head
  }

  /** Records a fetched offset (strictly increasing, at or past the position). */
  fetched(offset: bigint): TrackedOffset {
    if (this.#released) throw new Error(`offset ${offset} fetched after the partition was released`)
    if (offset < this.#position) throw new Error(`offset ${offset} fetched again below position ${this.#position}`)
    const last = this.#entries[this.#entries.length - 1]
    if (last !== undefined && offset <= last.offset) throw new Error(`offset ${offset} fetched out of order`)
    const entry: TrackedOffset = { offset, handed: false, handled: false }
    this.#entries.push(entry)
    this.#position = offset + 1n
    return entry
  }

  /**
   * Moves the position past what a fetch answer covered without records of its own (markers, aborted or
   * compacted ranges): only ever to the end of a batch the answer held (see `readCommitted`).
   */
  advanceTo(position: bigint): void {
    if (position > this.#position) this.#position = position
  }

  /** The record is given to `deliver`. */
  handed(entry: TrackedOffset): void {
    entry.handed = true
  }

  /** Its outcome came back: it may be committed past. A record never handed cannot be handled. */
  handled(entry: TrackedOffset): void {
    if (!entry.handed) throw new Error(`offset ${entry.offset} handled without being handed to deliver`)
    entry.handled = true
    this.#compact()
  }

  /** The offset a commit may name: every fetched record before it is handled. */
  committable(): bigint {
    return this.#entries[this.#head]?.offset ?? this.#position
  }

  /**
   * Whether a commit of `offset` may go out: it never passes a record not handled, never goes back, and never
   * follows the hand-over. `unchanged`: nothing new to commit.
   */
  authorize(offset: bigint): CommitVerdict {
    if (this.#released) return { kind: 'refused', reason: CommitRefusals.RELEASED, limit: this.#committed ?? -1n }
    const limit = this.committable()
    if (offset > limit) return { kind: 'refused', reason: CommitRefusals.PAST_UNHANDLED, limit }
    if (this.#committed !== undefined && offset < this.#committed) {
      return { kind: 'refused', reason: CommitRefusals.BACKWARDS, limit: this.#committed }
    }
    if (offset === this.#committed) return { kind: 'unchanged' }
    return { kind: 'commit' }
  }

  /** A commit of `offset` was acknowledged. */
  committedAt(offset: bigint): void {
    if (this.#committed === undefined || offset > this.#committed) this.#committed = offset
  }

  /** The partition is handed over (its last commit made): nothing more is fetched or committed for it. */
  release(): void {
    this.#released = true
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
