import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { batchOpen, nextBatch, recordBytes } from '../../src/kafka-source/batch-builder.ts'
import type { BatchLimits } from '../../src/kafka-source/types.ts'
import { OffsetTracker } from '../../src/kafka-source/offset-tracker.ts'
import type { QueuedRecord } from '../../src/kafka-source/partition-run.ts'

/** Queued records of `sizes` value bytes (no key, no headers), fetched at `fetchedAt`. */
function queue(sizes: readonly number[], fetchedAt = 0): QueuedRecord[] {
  const tracker = new OffsetTracker(0n)
  return sizes.map((size, i) => ({
    record: {
      topic: 't',
      partition: 0,
      offset: BigInt(i),
      timestamp: 0n,
      key: null,
      value: Buffer.alloc(size),
      headers: [],
      fetchedAt
    },
    tracker,
    entry: tracker.fetched(BigInt(i))
  }))
}

const limits: BatchLimits = { maxEvents: 3, maxBytes: 100, maxWaitMs: 50 }

describe('nextBatch', () => {
  it('closes at maxEvents', () => {
    assert.deepEqual(nextBatch(queue([1, 1, 1, 1, 1]), 0, limits, 0), { kind: 'send', count: 3 })
    assert.deepEqual(nextBatch(queue([1, 1, 1, 1, 1]), 3, limits, 0), { kind: 'wait', at: 50 })
  })

  it('closes before the record that would take it past maxBytes; a bigger record goes alone', () => {
    assert.deepEqual(nextBatch(queue([60, 30, 20]), 0, limits, 0), { kind: 'send', count: 2 })
    assert.deepEqual(nextBatch(queue([150, 1]), 0, limits, 0), { kind: 'send', count: 1 })
    assert.deepEqual(nextBatch(queue([60, 40]), 0, limits, 0), { kind: 'send', count: 2 }, 'exactly maxBytes is full')
  })

  it('a batch not full waits until maxWait after its first record was fetched, then goes as it is', () => {
    const q = queue([1, 1], 1_000)
    assert.deepEqual(nextBatch(q, 0, limits, 1_010), { kind: 'wait', at: 1_050 })
    assert.deepEqual(nextBatch(q, 0, limits, 1_050), { kind: 'send', count: 2 })
    assert.deepEqual(nextBatch(q, 0, { ...limits, maxWaitMs: 0 }, 1_000), { kind: 'send', count: 2 })
  })

  it('a partition is fetched for more only while its batch is open', () => {
    assert.equal(batchOpen(0, limits), false)
    assert.equal(batchOpen(2, limits), true)
    assert.equal(batchOpen(3, limits), false)
  })

  it('counts key, value and header bytes', () => {
    const [q] = queue([5])
    const record = { ...q!.record, key: Buffer.from('ab'), headers: [['h', Buffer.from('xyz')]] as const }
    assert.equal(recordBytes(record), 5 + 2 + 1 + 3)
  })

  it('cuts any queue into contiguous batches within the limits, every record once, in order', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 300 }), { minLength: 1, maxLength: 200 }),
        fc.integer({ min: 1, max: 20 }),
        fc.integer({ min: 1, max: 500 }),
        (sizes, maxEvents, maxBytes) => {
          const q = queue(sizes)
          const l = { maxEvents, maxBytes, maxWaitMs: 10 }
          let head = 0
          while (head < q.length) {
            const decision = nextBatch(q, head, l, 10)
            assert.equal(decision.kind, 'send', 'past maxWait everything goes')
            const count = decision.kind === 'send' ? decision.count : 0
            assert.ok(count >= 1 && count <= maxEvents)
            const batch = sizes.slice(head, head + count)
            const bytes = batch.reduce((a, b) => a + b, 0)
            assert.ok(count === 1 || bytes <= maxBytes, `${count} records of ${bytes} bytes`)
            // Closed as late as allowed: the next record would not have fit.
            if (head + count < q.length && count < maxEvents) assert.ok(bytes + sizes[head + count]! > maxBytes)
            head += count
          }
          assert.equal(head, q.length)
        }
      )
    )
  })
})
