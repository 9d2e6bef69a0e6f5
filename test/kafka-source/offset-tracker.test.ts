import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { OffsetTracker } from '../../src/kafka-source/offset-tracker.ts'
import type { TrackedOffset } from '../../src/kafka-source/offset-tracker.ts'

/** Hands a record to delivery and marks it handled, as the member does. */
function done(t: OffsetTracker, ...entries: TrackedOffset[]): void {
  for (const e of entries) {
    t.handed(e)
    t.handled(e)
  }
}

describe('OffsetTracker', () => {
  it('commits the first unhandled fetched offset, whatever order records are handled in', () => {
    const t = new OffsetTracker(10n)
    assert.equal(t.committable(), 10n)
    const a = t.fetched(10n)
    const b = t.fetched(11n)
    const c = t.fetched(12n)
    assert.equal(t.committable(), 10n)
    done(t, b)
    done(t, c)
    assert.equal(t.committable(), 10n, 'a slow first record holds the commit back')
    assert.equal(t.outstanding, 3)
    done(t, a)
    assert.equal(t.committable(), 13n)
    assert.equal(t.outstanding, 0)
  })

  it('steps over gaps: compacted offsets and transaction markers are never waited for', () => {
    const t = new OffsetTracker(0n)
    const a = t.fetched(0n)
    const b = t.fetched(5n) // 1–4 compacted away
    t.advanceTo(8n) // 6 and 7 were a transaction marker and an aborted record
    done(t, a)
    assert.equal(t.committable(), 5n, 'the next record, not offset + 1')
    done(t, b)
    assert.equal(t.committable(), 8n, 'the fetch position, past the marker')
    assert.equal(t.position, 8n)
  })

  it('refuses offsets below the position or out of order', () => {
    const t = new OffsetTracker(5n)
    assert.throws(() => t.fetched(4n))
    t.fetched(7n)
    assert.throws(() => t.fetched(7n))
  })

  it('keeps memory to what is outstanding over many records', () => {
    const t = new OffsetTracker(0n)
    const first = t.fetched(0n)
    const rest = []
    for (let i = 1n; i < 5000n; i++) rest.push(t.fetched(i))
    for (const e of rest) done(t, e)
    assert.equal(t.committable(), 0n)
    done(t, first)
    assert.equal(t.committable(), 5000n)
    assert.equal(t.outstanding, 0)
  })

  it('authorizes a commit only up to the first record not handled, never backwards, never after the release', () => {
    const t = new OffsetTracker(10n, 10n)
    const a = t.fetched(10n)
    const b = t.fetched(11n)
    assert.deepEqual(t.authorize(10n), { kind: 'unchanged' })
    assert.deepEqual(t.authorize(12n), { kind: 'refused', reason: 'past-unhandled', limit: 10n })
    done(t, a)
    assert.deepEqual(t.authorize(11n), { kind: 'commit' })
    t.committedAt(11n)
    assert.deepEqual(t.authorize(10n), { kind: 'refused', reason: 'backwards', limit: 11n })
    t.handed(b)
    t.release()
    assert.deepEqual(t.authorize(11n), { kind: 'refused', reason: 'released', limit: 11n })
    assert.throws(() => t.fetched(12n), /released/)
  })

  it('refuses a record handled that was never handed to delivery', () => {
    const t = new OffsetTracker(0n)
    const a = t.fetched(0n)
    assert.throws(() => t.handled(a), /without being handed/)
    assert.equal(t.committable(), 0n)
  })
})
