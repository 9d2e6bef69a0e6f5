import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { lagBetween, lagFigures, ratesBetween } from '../../src/lag/index.ts'
import type { PartitionFigures } from '../../src/lag/index.ts'

function partition(committed: bigint | undefined, lastStable: bigint, startsAt = lastStable): PartitionFigures {
  const from = committed ?? startsAt
  return { committed, from, lastStable, lag: lagBetween(from, lastStable) }
}

describe('consumed and produced rates', () => {
  it('a group that never committed consumed nothing, however fast its topic grows', () => {
    // initialOffset latest: the reader counts the lag of an uncommitted partition from the end, which moves with
    // the topic. Summed as if committed, it made the consumed rate equal the produced rate.
    const before = { at: 0, ...lagFigures([partition(undefined, 1_000n)]) }
    const after = { at: 5_000, ...lagFigures([partition(undefined, 6_000n)]) }
    assert.equal(after.lag, 0)
    assert.deepEqual(ratesBetween(before, after), { consumedPerSec: 0, producedPerSec: 1_000 })
  })

  it('counts the growth of real commits, and no consumption for a partition’s first commit', () => {
    const a = { at: 0, ...lagFigures([partition(100n, 1_000n), partition(undefined, 5_000n)]) }
    const b = { at: 2_000, ...lagFigures([partition(300n, 1_000n), partition(undefined, 5_000n)]) }
    assert.equal(ratesBetween(a, b).consumedPerSec, 100)
    // The second partition's first commit, at 5,000: not 5,000 records consumed in two seconds.
    const c = { at: 4_000, ...lagFigures([partition(300n, 1_000n), partition(5_010n, 5_010n)]) }
    assert.equal(ratesBetween(b, c).consumedPerSec, 0)
    const d = { at: 6_000, ...lagFigures([partition(500n, 1_000n), partition(5_210n, 5_210n)]) }
    assert.equal(ratesBetween(c, d).consumedPerSec, 200)
  })
})
