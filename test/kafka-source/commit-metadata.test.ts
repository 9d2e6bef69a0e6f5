import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { MAX_COMMIT_METADATA_CHARS, readCommitNote, writeCommitNote } from '../../src/kafka-source/commit-metadata.ts'
import type { OffsetRange } from '../../src/kafka-source/commit-metadata.ts'
import { OffsetTracker } from '../../src/kafka-source/offset-tracker.ts'

/** The offsets a list of ranges names, as a set (small ranges only). */
function offsetsOf(ranges: readonly OffsetRange[]): Set<bigint> {
  const set = new Set<bigint>()
  for (const { from, to } of ranges) for (let o = from; o < to; o++) set.add(o)
  return set
}

/** Handled offsets past a committed one, as a sorted list of distinct offsets. */
const handledPast = (committed: bigint) =>
  fc
    .uniqueArray(fc.integer({ min: 0, max: 3000 }), { maxLength: 400 })
    .map(list => list.sort((a, b) => a - b).map(i => committed + BigInt(i)))

/** Ranges of single offsets (the writer merges touching ones). */
const rangesOf = (offsets: readonly bigint[]): OffsetRange[] => offsets.map(o => ({ from: o, to: o + 1n }))

const committedOffsets = fc.bigInt({ min: 0n, max: 1n << 50n })

describe('commit metadata (what a commit says past its offset)', () => {
  it('reads back exactly the handled offsets it was written with, when they fit', () => {
    fc.assert(
      fc.property(
        committedOffsets.chain(c => fc.tuple(fc.constant(c), handledPast(c))),
        fc.option(fc.tuple(fc.string({ maxLength: 40 }), fc.option(fc.string({ maxLength: 60 }), { nil: undefined })), {
          nil: undefined
        }),
        ([committed, handled], mark) => {
          const [draining, drainingMemberId] = mark ?? [undefined, undefined]
          const text = writeCommitNote(committed, { handled: rangesOf(handled), draining, drainingMemberId }, 100_000)
          const read = readCommitNote(committed, text)
          assert.equal(read.unreadable, undefined)
          assert.deepEqual([...offsetsOf(read.handled)], handled)
          assert.equal(read.draining, draining)
          assert.equal(read.drainingMemberId, drainingMemberId)
          if (handled.length === 0 && draining === undefined) assert.equal(text, null)
        }
      )
    )
  })

  it('stays within its size and never names an offset that was not handled, however many there are', () => {
    fc.assert(
      fc.property(
        committedOffsets.chain(c => fc.tuple(fc.constant(c), handledPast(c))),
        fc.integer({ min: 12, max: MAX_COMMIT_METADATA_CHARS }),
        ([committed, handled], maxChars) => {
          const text = writeCommitNote(committed, { handled: rangesOf(handled), draining: undefined }, maxChars)
          if (text !== null) assert.ok(text.length <= maxChars, `${text.length} > ${maxChars}`)
          const named = offsetsOf(readCommitNote(committed, text).handled)
          const truth = new Set(handled)
          for (const o of named) assert.ok(truth.has(o), `offset ${o} named but not handled`)
        }
      )
    )
  })

  it('names many handled records in its 1,024 characters, with both encodings in use', () => {
    // Long runs: run lengths are shortest; one record in two: the bit set is.
    const runs = writeCommitNote(10n, { handled: [{ from: 11n, to: 100_000n }], draining: undefined })!
    assert.match(runs, /^shoal\/2 r:/)
    assert.equal(offsetsOf(readCommitNote(10n, runs).handled).size, 99_989)
    const alternate = Array.from({ length: 5000 }, (_, i) => ({ from: 11n + 2n * BigInt(i), to: 12n + 2n * BigInt(i) }))
    const bits = writeCommitNote(10n, { handled: alternate, draining: undefined })!
    assert.match(bits, /^shoal\/2 b:/)
    assert.ok(bits.length <= MAX_COMMIT_METADATA_CHARS)
    assert.ok(offsetsOf(readCommitNote(10n, bits).handled).size >= 3000, 'about 6 records per 8 characters')
  })

  it('reads the draining mark of the version before, and says nothing on text it does not understand', () => {
    assert.deepEqual(readCommitNote(5n, 'shoal-handover/1 draining member-a'), { handled: [], draining: 'member-a' })
    for (const text of [null, '', 'some other client', 'shoal/3 r:1.4', 'shoal/2x r:1.4', undefined]) {
      const read = readCommitNote(5n, text)
      assert.deepEqual(read.handled, [], JSON.stringify(text))
      assert.equal(read.draining, undefined)
    }
    for (const text of [
      'shoal/2 r:1',
      'shoal/2 r:1.0',
      'shoal/2 r:1.4.0.2',
      'shoal/2 r:A.4',
      'shoal/2 b:@@',
      'shoal/2 q:1'
    ]) {
      const read = readCommitNote(5n, text)
      assert.deepEqual(read.handled, [], text)
      assert.ok(read.unreadable, `${text} is called unreadable`)
    }
    assert.equal(readCommitNote(5n, 'shoal/2 d:a%20b r:zzzzzzzzzzzzz.1').draining, 'a b', 'the mark outlives bad runs')
    // A mark naming the member id reads, to a reader that knows only the instance id, as one name: it still waits.
    const bound = writeCommitNote(5n, { handled: [], draining: 'dispatcher-0-1', drainingMemberId: 'm,1' })!
    assert.equal(decodeURIComponent(bound.slice('shoal/2 d:'.length)), 'dispatcher-0-1,m,1')
    assert.equal(readCommitNote(5n, bound).drainingMemberId, 'm,1')
    assert.ok(readCommitNote(5n, 'shoal/2 r:zzzzzzzzzzzzz.1').unreadable, 'a run past the bound is refused')
  })

  it('never throws on any text, and what it reads lies at or past the offset', () => {
    fc.assert(
      fc.property(
        committedOffsets,
        fc.oneof(
          fc.string(),
          fc.string().map(s => `shoal/2 ${s}`),
          fc.string({ unit: fc.constantFrom(...'0123456789az.') }).map(s => `shoal/2 r:${s}`),
          fc.base64String().map(s => `shoal/2 b:${s.replaceAll('=', '')}`)
        ),
        (committed, text) => {
          const read = readCommitNote(committed, text)
          let at = committed
          for (const { from, to } of read.handled) {
            assert.ok(from >= at && to > from)
            at = to
          }
        }
      )
    )
  })
})

/**
 * A partition's records (offsets with gaps), handled in any order by a first owner, whose commit is read by a second
 * owner fetching the same records: the model is the set of records each delivers.
 */
describe('a partition moving to a new owner with its commit metadata', () => {
  const scenario = fc.record({
    start: fc.bigInt({ min: 0n, max: 1_000_000n }),
    gaps: fc.array(fc.integer({ min: 1, max: 4 }), { minLength: 1, maxLength: 300 }),
    handled: fc.array(fc.boolean(), { maxLength: 300 }),
    fetchedByFirst: fc.integer({ min: 0, max: 300 }),
    maxChars: fc.constantFrom(40, 200, MAX_COMMIT_METADATA_CHARS)
  })

  it('loses no record, and repeats none the first owner handled when the commit names them all', () => {
    fc.assert(
      fc.property(scenario, ({ start, gaps, handled, fetchedByFirst, maxChars }) => {
        const records: bigint[] = []
        let offset = start
        for (const gap of gaps) records.push((offset += BigInt(gap)))
        const first = new OffsetTracker(start, start)
        const handledByFirst = new Set<bigint>()
        const fetched = records.slice(0, Math.min(fetchedByFirst, records.length))
        const entries = fetched.map(o => first.fetched(o))
        entries.forEach((entry, i) => {
          first.handed(entry)
          if (handled[i] === true) {
            first.handled(entry)
            handledByFirst.add(entry.offset)
          }
        })
        const committed = first.committable()
        const note = writeCommitNote(committed, { handled: first.handledPast(), draining: undefined }, maxChars)
        const read = readCommitNote(committed, note)

        const second = new OffsetTracker(committed, committed, read.handled, note)
        const deliveredBySecond = new Set<bigint>()
        for (const o of records) {
          if (o < committed) continue
          const entry = second.fetched(o)
          if (entry.handled) continue
          second.handed(entry)
          second.handled(entry)
          deliveredBySecond.add(o)
        }
        for (const o of records) {
          assert.ok(handledByFirst.has(o) || deliveredBySecond.has(o), `record ${o} delivered by neither owner`)
        }
        const repeated = [...deliveredBySecond].filter(o => handledByFirst.has(o))
        if (maxChars === MAX_COMMIT_METADATA_CHARS) assert.deepEqual(repeated, [])
        assert.equal(second.skipped, records.filter(o => o >= committed).length - deliveredBySecond.size)
      })
    )
  })

  it('a third owner still skips what the first handled when the second fetched none of it', () => {
    const first = new OffsetTracker(0n, 0n)
    const entries = [0n, 1n, 2n, 5n, 6n].map(o => first.fetched(o))
    for (const e of entries.slice(1)) {
      first.handed(e)
      first.handled(e)
    }
    const note1 = writeCommitNote(0n, { handled: first.handledPast(), draining: undefined })
    assert.deepEqual(first.handledPast(), [{ from: 1n, to: 7n }], 'the gap 3–4 between two handled records is merged')
    const second = new OffsetTracker(0n, 0n, readCommitNote(0n, note1).handled, note1)
    const note2 = writeCommitNote(second.committable(), { handled: second.handledPast(), draining: 'b' })
    assert.deepEqual(readCommitNote(0n, note2), { handled: [{ from: 1n, to: 7n }], draining: 'b' })
    const third = new OffsetTracker(0n, 0n, readCommitNote(0n, note2).handled)
    assert.deepEqual(
      [0n, 1n, 2n, 5n, 6n, 7n].map(o => third.fetched(o).handled),
      [false, true, true, true, true, false]
    )
  })
})
