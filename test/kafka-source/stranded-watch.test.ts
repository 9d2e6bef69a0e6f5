import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { StrandedWatch, strandedPartitions } from '../../src/kafka-source/stranded-partitions.ts'
import type { StrandedVerdict } from '../../src/kafka-source/stranded-partitions.ts'

const counts = new Map([
  ['a', 3],
  ['b', 2]
])

describe('strandedPartitions', () => {
  it('names the partitions of a stable group that no member holds', () => {
    const view = {
      state: 'Stable',
      members: [
        { assigned: [{ topic: 'a', partitions: [0, 2] }] },
        { assigned: [{ topic: 'b', partitions: [1] }] },
        { assigned: [] }
      ]
    }
    assert.deepEqual(strandedPartitions(view, counts), ['a/1', 'b/0'])
  })

  it('names none while the group rebalances or has no members', () => {
    for (const state of ['PreparingRebalance', 'CompletingRebalance', 'Empty', 'Dead']) {
      assert.deepEqual(strandedPartitions({ state, members: [{ assigned: [] }] }, counts), [])
    }
    assert.deepEqual(strandedPartitions({ state: 'Stable', members: [] }, counts), [])
  })

  it('ignores partitions of topics it was not asked about', () => {
    const view = { state: 'Stable', members: [{ assigned: [{ topic: 'c', partitions: [0] }] }] }
    assert.deepEqual(strandedPartitions(view, new Map([['a', 1]])), ['a/0'])
  })
})

// The reference: a repair is due when this look and the one before it were at the same generation and found a
// partition held by nobody in both; a repair (or a look that finds nothing) starts over.
interface Look {
  readonly generation: number
  readonly stranded: readonly string[]
}

function reference(looks: readonly Look[]): StrandedVerdict[] {
  const verdicts: StrandedVerdict[] = []
  let previous: Look | undefined
  for (const look of looks) {
    if (look.stranded.length === 0) {
      verdicts.push('none')
      previous = undefined
    } else if (
      previous !== undefined &&
      previous.generation === look.generation &&
      look.stranded.some(p => previous!.stranded.includes(p))
    ) {
      verdicts.push('repair')
      previous = undefined
    } else {
      verdicts.push('confirm')
      previous = look
    }
  }
  return verdicts
}

const look = fc.record({
  generation: fc.integer({ min: 1, max: 3 }),
  stranded: fc.uniqueArray(fc.constantFrom('t/0', 't/1', 't/2'), { maxLength: 3 })
})

describe('StrandedWatch against its reference', () => {
  it('decides as the reference does, and counts each repair', () => {
    fc.assert(
      fc.property(fc.array(look, { maxLength: 30 }), looks => {
        const watch = new StrandedWatch()
        const verdicts = looks.map(l => watch.observe(l.generation, l.stranded))
        assert.deepEqual(verdicts, reference(looks))
        assert.equal(watch.repairs, verdicts.filter(v => v === 'repair').length)
      })
    )
  })

  it('never repairs on one look, nor across a rebalance (a new generation)', () => {
    fc.assert(
      fc.property(fc.array(look, { maxLength: 30 }), looks => {
        const watch = new StrandedWatch()
        let previous: Look | undefined
        for (const l of looks) {
          const verdict = watch.observe(l.generation, l.stranded)
          if (verdict === 'repair') {
            assert.ok(previous !== undefined && previous.generation === l.generation && previous.stranded.length > 0)
          }
          previous = verdict === 'confirm' ? l : undefined
        }
      })
    )
  })
})
