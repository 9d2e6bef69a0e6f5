import type { OffsetRange } from './commit-metadata.ts'

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
 *
 * It also says which records past the committable offset are handled (`handledPast`), for the commit's metadata
 * (see `commit-metadata.ts`), and skips records a former owner's commit named handled: such a record is fetched
 * already handled, never handed to `deliver`, and counted (`skipped`).
 */
export class OffsetTracker {
  #entries: TrackedOffset[] = []
  #head = 0
  #position: bigint
  #committed: bigint | undefined
  #committedNote: string | null
  #released = false
  /** Offsets a former owner handled, not fetched yet: ascending, disjoint. */
  #inherited: OffsetRange[]
  #skipped = 0

  /**
   * `position`: where fetching starts (the committed offset, or the initial offset's). `committed` and
   * `committedNote`: the commit found there and its metadata; `inherited`: the offsets that commit says a former
   * owner handled.
   */
  constructor(
    position: bigint,
    committed?: bigint,
    inherited: readonly OffsetRange[] = [],
    committedNote?: string | null
  ) {
    this.#position = position
    this.#committed = committed
    this.#committedNote = committedNote ?? null
    this.#inherited = inherited.filter(r => r.to > position && r.to > r.from)
  }

  /** The next offset to fetch. */
  get position(): bigint {
    return this.#position
  }

  /** The offset this assignment last committed (or found committed when it started). */
  get committed(): bigint | undefined {
    return this.#committed
  }

  /** The metadata of that commit. */
  get committedNote(): string | null {
    return this.#committedNote
  }

  /** Records fetched already handled by a former owner, and so not delivered again. */
  get skipped(): number {
    return this.#skipped
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
    while (this.#inherited.length > 0 && this.#inherited[0]!.to <= offset) this.#inherited.shift()
    const inherited = this.#inherited[0] !== undefined && this.#inherited[0].from <= offset
    const entry: TrackedOffset = { offset, handed: inherited, handled: inherited }
    this.#entries.push(entry)
    this.#position = offset + 1n
    if (inherited) {
      this.#skipped++
      this.#compact()
    }
    return entry
  }

  /**
   * Moves the position past what a fetch answer covered without records of its own (markers, aborted or
   * compacted ranges): only ever to the end of a batch the answer held (see `readCommitted`).
   */
  advanceTo(position: bigint): void {
    if (position > this.#position) this.#position = position
    while (this.#inherited.length > 0 && this.#inherited[0]!.to <= this.#position) this.#inherited.shift()
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
   * The offsets past the committable one whose records are handled: fetched and handled here, with the offsets
   * between two such records that hold none (markers, aborted or compacted), and those a former owner handled that
   * are not fetched yet. Ascending, disjoint.
   */
  handledPast(): OffsetRange[] {
    const ranges: Array<{ from: bigint; to: bigint }> = []
    let open: { from: bigint; to: bigint } | undefined
    for (let i = this.#head + 1; i < this.#entries.length; i++) {
      const entry = this.#entries[i]!
      if (!entry.handled) {
        open = undefined
        continue
      }
      if (open === undefined) ranges.push((open = { from: entry.offset, to: entry.offset + 1n }))
      else open.to = entry.offset + 1n
    }
    // Past the last fetched record up to the position there is no record left to deliver.
    if (open !== undefined && this.#entries.length - 1 > this.#head) open.to = this.#position
    for (const range of this.#inherited) {
      const from = range.from < this.#position ? this.#position : range.from
      if (from >= range.to) continue
      const last = ranges[ranges.length - 1]
      if (last !== undefined && last.to >= from) last.to = range.to
      else ranges.push({ from, to: range.to })
    }
    return ranges
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

  /** A commit of `offset` with metadata `note` was acknowledged. */
  committedAt(offset: bigint, note: string | null = null): void {
    if (this.#committed === undefined || offset >= this.#committed) {
      this.#committed = offset
      this.#committedNote = note
    }
  }

  /** The log moved under the position (see `StartPositions.resetOutOfRange`): what a former owner said is void. */
  forgetInherited(): void {
    this.#inherited = []
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
