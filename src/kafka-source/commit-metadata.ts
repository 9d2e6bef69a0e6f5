// What a member writes beside a committed offset, in the commit's metadata string, for the partition's next owner:
// which later records it already handled (an unordered or key-ordered member delivers past a record that holds the
// commit back), and whether it is still draining the partition (see `partition-handover.ts`). A new owner skips the handled
// records, so a record stuck at a partition's head no longer makes a rebalance deliver everything behind it again.
//
// The text, version 2 (docs/kafka-source.md, "What a commit says"):
//
//   shoal/2[ d:<member>[,<member id>]][ r:<runs> | b:<bits>]
//
// `d:` names the draining member by its group instance id and, since hand-overs are bound to it, by the member id
// the coordinator gave it when the partition was revoked; each percent-encoded (so the comma is unambiguous; a
// reader that knows only the instance id reads both as one name).
//
// Both encodings count from the committed offset C. `r:` is run lengths in base 36, joined by `.`, alternating
// offsets not handled and offsets handled, starting with not handled (0 when C itself was handled by a former owner
// and not fetched since): `r:1.5.3.2` is C not handled, C+1…C+5 handled, C+6…C+8 not, C+9 and C+10 handled. `b:`
// is a bit set in base64url, bit i (most significant first in each byte) for offset C+i. The writer picks whichever
// says more within MAX_COMMIT_METADATA_CHARS, dropping the farthest offsets when neither fits: an offset left out is
// delivered again, never lost. A commit with nothing to say has no metadata, as before version 2.
//
// Read back: version 2; the version 1 draining mark (`shoal-handover/1 draining <member>`); and anything else —
// no metadata, another tool's, a later version — as saying nothing: no record is skipped on text not understood.

/** Offsets from `from` up to, not including, `to`. */
export interface OffsetRange {
  readonly from: bigint
  readonly to: bigint
}

/** What a commit's metadata says about the partition past its offset. */
export interface CommitNote {
  /** Offsets at or past the committed one already handled: ascending, disjoint, not empty each. */
  readonly handled: readonly OffsetRange[]
  /** The member draining the partition (the hand-over's mark), if one is: its group instance id. */
  readonly draining: string | undefined
  /**
   * The member id the draining member's hand-over commits are bound to (see `partition-handover.ts`): once no member
   * of the group has it, the coordinator takes none of them. Absent in marks written before it was named.
   */
  readonly drainingMemberId?: string | undefined
}

/** A note read back: `unreadable` says why a version 2 text was not understood (its handled offsets are then none). */
export interface CommitNoteReading extends CommitNote {
  readonly unreadable?: string
}

/**
 * The longest metadata a member writes. Brokers refuse longer than `offset.metadata.max.bytes` (4096 by default) for
 * the whole partition's metadata; this leaves room and keeps a commit of many partitions small.
 */
export const MAX_COMMIT_METADATA_CHARS = 1024

const VERSION = 'shoal/2'
const LEGACY_DRAINING = 'shoal-handover/1 draining '
/** The farthest a note reaches past its offset: a bound on what a reader builds from text it did not write. */
const MAX_SPAN = 1n << 32n

/** The metadata text of a commit at `committed` saying `note`; null when it says nothing. */
export function writeCommitNote(
  committed: bigint,
  note: CommitNote,
  maxChars: number = MAX_COMMIT_METADATA_CHARS
): string | null {
  const head = note.draining === undefined ? VERSION : `${VERSION} d:${drainingField(note)}`
  const handled = clip(note.handled, committed)
  if (handled.length === 0) return note.draining === undefined ? null : head
  const budget = maxChars - head.length - ' r:'.length
  const runs = runsWithin(committed, handled, budget)
  const bits = bitsWithin(committed, handled, budget)
  const best =
    runs.covered > bits.covered || (runs.covered === bits.covered && runs.text.length <= bits.text.length)
      ? { kind: 'r', ...runs }
      : { kind: 'b', ...bits }
  return best.covered === 0n ? (note.draining === undefined ? null : head) : `${head} ${best.kind}:${best.text}`
}

/** What the metadata of a commit at `committed` says. */
export function readCommitNote(committed: bigint, text: string | null | undefined): CommitNoteReading {
  if (text == null) return NOTHING
  if (text.startsWith(LEGACY_DRAINING)) return { handled: [], draining: text.slice(LEGACY_DRAINING.length) }
  if (text !== VERSION && !text.startsWith(`${VERSION} `)) return NOTHING
  let draining: string | undefined
  let drainingMemberId: string | undefined
  let handled: OffsetRange[] = []
  for (const field of text.slice(VERSION.length + 1).split(' ')) {
    if (field === '') continue
    const value = field.slice(2)
    try {
      if (field.startsWith('d:')) [draining, drainingMemberId] = value.split(',', 2).map(decodeURIComponent)
      else if (field.startsWith('r:')) handled = readRuns(committed, value)
      else if (field.startsWith('b:')) handled = readBits(committed, value)
      else
        return {
          ...mark(draining, drainingMemberId),
          unreadable: `unknown field ${JSON.stringify(field.slice(0, 16))}`
        }
    } catch (error) {
      return { ...mark(draining, drainingMemberId), unreadable: error instanceof Error ? error.message : String(error) }
    }
  }
  return { ...mark(draining, drainingMemberId), handled }
}

/** A reading with the mark only (no handled offsets). */
function mark(draining: string | undefined, drainingMemberId: string | undefined): CommitNoteReading {
  return drainingMemberId === undefined ? { handled: [], draining } : { handled: [], draining, drainingMemberId }
}

/** The `d:` field's value: the instance id, and the member id when known. */
function drainingField(note: CommitNote): string {
  const who = encodeURIComponent(note.draining!)
  return note.drainingMemberId === undefined ? who : `${who},${encodeURIComponent(note.drainingMemberId)}`
}

const NOTHING: CommitNoteReading = Object.freeze({ handled: Object.freeze([]), draining: undefined })

/** The ranges at or past `committed`, cut to start there, in order, touching ones merged. */
function clip(ranges: readonly OffsetRange[], committed: bigint): OffsetRange[] {
  const sorted = ranges
    .filter(r => r.to > committed && r.to > r.from && r.from < committed + MAX_SPAN)
    .map(r => ({
      from: r.from < committed ? committed : r.from,
      to: r.to > committed + MAX_SPAN ? committed + MAX_SPAN : r.to
    }))
    .sort((a, b) => (a.from < b.from ? -1 : a.from > b.from ? 1 : 0))
  const result: Array<{ from: bigint; to: bigint }> = []
  for (const range of sorted) {
    const last = result[result.length - 1]
    if (last !== undefined && range.from <= last.to) last.to = range.to > last.to ? range.to : last.to
    else result.push({ ...range })
  }
  return result
}

interface Encoded {
  readonly text: string
  /** Handled offsets the text names. */
  readonly covered: bigint
}

function runsWithin(committed: bigint, handled: readonly OffsetRange[], budget: number): Encoded {
  let text = ''
  let covered = 0n
  let at = committed
  for (const { from, to } of handled) {
    const pair = `${(from - at).toString(36)}.${(to - from).toString(36)}`
    const next = text === '' ? pair : `${text}.${pair}`
    if (next.length > budget) break
    text = next
    covered += to - from
    at = to
  }
  return { text, covered }
}

function bitsWithin(committed: bigint, handled: readonly OffsetRange[], budget: number): Encoded {
  // base64url without padding: 4 characters per 3 bytes.
  const maxBytes = Math.floor((budget * 3) / 4)
  const end = handled[handled.length - 1]!.to
  const bytes = new Uint8Array(Math.min(maxBytes, Number((end - committed + 7n) / 8n)))
  const limit = committed + BigInt(bytes.length) * 8n
  let covered = 0n
  for (const { from, to } of handled) {
    for (let offset = from; offset < to && offset < limit; offset++) {
      const i = Number(offset - committed)
      bytes[i >> 3]! |= 0x80 >> (i & 7)
      covered++
    }
  }
  let last = bytes.length
  while (last > 0 && bytes[last - 1] === 0) last--
  return { text: Buffer.from(bytes.subarray(0, last)).toString('base64url'), covered }
}

function readRuns(committed: bigint, text: string): OffsetRange[] {
  const lengths = text.split('.').map(part => {
    if (!/^[0-9a-z]{1,13}$/.test(part))
      throw new Error(`run length ${JSON.stringify(part.slice(0, 16))} is not base 36`)
    return [...part].reduce((n, digit) => n * 36n + BigInt(parseInt(digit, 36)), 0n)
  })
  if (lengths.length % 2 !== 0) throw new Error('runs come in pairs (not handled, handled)')
  const ranges: OffsetRange[] = []
  let at = committed
  for (let i = 0; i < lengths.length; i += 2) {
    const skip = lengths[i]!
    const length = lengths[i + 1]!
    if (length === 0n || (skip === 0n && i > 0)) throw new Error('a run after the first is empty')
    at += skip
    ranges.push({ from: at, to: at + length })
    at += length
    if (at - committed > MAX_SPAN) throw new Error('the runs reach too far past the offset')
  }
  return ranges
}

function readBits(committed: bigint, text: string): OffsetRange[] {
  if (!/^[A-Za-z0-9_-]*$/.test(text) || text.length % 4 === 1) throw new Error('the bit set is not base64url')
  const bytes = Buffer.from(text, 'base64url')
  if (BigInt(bytes.length) * 8n > MAX_SPAN) throw new Error('the bit set reaches too far past the offset')
  const ranges: OffsetRange[] = []
  let open: bigint | undefined
  for (let i = 0; i <= bytes.length * 8; i++) {
    const set = i < bytes.length * 8 && (bytes[i >> 3]! & (0x80 >> (i & 7))) !== 0
    const offset = committed + BigInt(i)
    if (set && open === undefined) open = offset
    else if (!set && open !== undefined) {
      ranges.push({ from: open, to: offset })
      open = undefined
    }
  }
  return ranges
}
