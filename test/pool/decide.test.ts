import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import {
  decidePool,
  parsePoolBounds,
  parseStatefulSetRef,
  parseZones,
  stabilize,
  zoneOf
} from '../../src/pool/index.ts'
import type { PoolInput, PoolMember } from '../../src/pool/index.ts'

const none = { consumer: 0, schedule: 0 }

function member(ordinal: number, placed: number, extra: Partial<PoolMember> = {}): PoolMember {
  return {
    id: `dispatcher-${ordinal}`,
    ordinal,
    capacity: { consumer: 10, schedule: 100 },
    placed: { consumer: placed, schedule: 0 },
    running: { consumer: placed, schedule: 0 },
    cordoned: false,
    ...extra
  }
}

function input(members: PoolMember[], over: Partial<PoolInput> = {}): PoolInput {
  return {
    bounds: { min: 1, max: 6 },
    members,
    pendingForCapacity: none,
    pendingUnschedulable: none,
    ...over
  }
}

describe('decidePool', () => {
  it('grows for vreplicas pending for lack of capacity: ceil(needed / capacity)', () => {
    const d = decidePool(input([member(0, 10), member(1, 10)], { pendingForCapacity: { consumer: 15, schedule: 0 } }))
    assert.equal(d.desired, 4) // 35 slots needed, 10 each
    assert.equal(d.replicas, 4)
    assert.equal(d.reason, 'pending')
    assert.deepEqual(d.draining, [])
    assert.deepEqual(d.needed, { consumer: 35, schedule: 0 })
  })

  it('does not grow for vreplicas a filter refuses, and does not shrink under them', () => {
    const d = decidePool(
      input([member(0, 2), member(1, 0), member(2, 0)], { pendingUnschedulable: { consumer: 9, schedule: 0 } })
    )
    assert.equal(d.desired, 3)
    assert.deepEqual(d.removable, [])
    assert.match(d.message, /9 consumer vreplicas refused by a filter/)
  })

  it('never goes above MAX, and says so', () => {
    const d = decidePool(
      input([member(0, 10), member(1, 10)], {
        bounds: { min: 1, max: 2 },
        pendingForCapacity: { consumer: 5, schedule: 0 }
      })
    )
    assert.equal(d.desired, 2)
    assert.equal(d.reason, 'at-max')
  })

  it('never goes below MIN', () => {
    const d = decidePool(input([member(0, 0), member(1, 0), member(2, 0)], { bounds: { min: 2, max: 6 } }))
    assert.equal(d.desired, 2)
    assert.deepEqual(d.removable, ['dispatcher-2'])
    assert.equal(d.replicas, 2)
  })

  it('drains the highest ordinals when the lower ones have room, and stops them only once empty', () => {
    // 12 consumer vreplicas fit in 2 dispatchers of 10; dispatcher-2 holds 2 and the others have 8 free.
    const busy = decidePool(input([member(0, 5), member(1, 5), member(2, 2)]))
    assert.equal(busy.desired, 2)
    assert.equal(busy.reason, 'compacting')
    assert.deepEqual(busy.draining, ['dispatcher-2'])
    assert.equal(busy.replicas, 3, 'a dispatcher holding vreplicas is not cut')
    assert.deepEqual(busy.removable, [])
    // The scheduler moved them; the contract is empty but the dispatcher still runs them: not yet.
    const applying = decidePool(
      input([member(0, 6), member(1, 6), member(2, 0, { running: { consumer: 2, schedule: 0 } })])
    )
    assert.equal(applying.replicas, 3)
    assert.deepEqual(applying.draining, ['dispatcher-2'])
    const empty = decidePool(input([member(0, 6), member(1, 6), member(2, 0)]))
    assert.equal(empty.replicas, 2)
    assert.deepEqual(empty.removable, ['dispatcher-2'])
  })

  it('holds a busy dispatcher when the kept ones have no room for what it holds', () => {
    // 19 vreplicas fit in 2 dispatchers, but dispatcher-0 and -1 have only 1 free slot for the 9 on dispatcher-2.
    const d = decidePool(
      input([member(0, 10), member(1, 0, { capacity: { consumer: 1, schedule: 100 } }), member(2, 9)])
    )
    assert.equal(d.desired, 2)
    assert.deepEqual(d.draining, [])
    assert.equal(d.replicas, 3)
    assert.match(d.message, /holding/)
  })

  it('starts one dispatcher when none runs and vreplicas wait', () => {
    const d = decidePool(input([], { bounds: { min: 0, max: 3 }, pendingForCapacity: { consumer: 3, schedule: 0 } }))
    assert.equal(d.desired, 1)
    const sized = decidePool(
      input([], {
        bounds: { min: 0, max: 5 },
        pendingForCapacity: { consumer: 25, schedule: 0 },
        capacity: { consumer: 10, schedule: 100 }
      })
    )
    assert.equal(sized.desired, 3)
  })

  it('counts schedule slots too: the larger need wins', () => {
    const d = decidePool(input([member(0, 1)], { pendingForCapacity: { consumer: 0, schedule: 250 } }))
    assert.equal(d.desired, 3)
  })

  it('with a stabilisation floor, steps down wait', () => {
    const d = decidePool(input([member(0, 1), member(1, 0), member(2, 0)], { atLeast: 3 }))
    assert.equal(d.desired, 3)
    assert.equal(d.reason, 'stabilizing')
    assert.deepEqual(d.removable, [])
  })
})

describe('stabilize', () => {
  it('takes the highest desired count of the window; steps up at once', () => {
    let s = stabilize([], 4, 0, 10_000)
    s = stabilize(s.recent, 1, 5_000, 10_000)
    assert.equal(s.desired, 4)
    s = stabilize(s.recent, 1, 10_001, 10_000)
    assert.equal(s.desired, 1)
    s = stabilize(s.recent, 5, 10_002, 10_000)
    assert.equal(s.desired, 5)
  })
})

describe('pool flags', () => {
  it('parses MIN..MAX, a count, zones and NS/NAME, naming the flag when wrong', () => {
    assert.deepEqual(parsePoolBounds('1..6'), { min: 1, max: 6 })
    assert.deepEqual(parsePoolBounds('3'), { min: 3, max: 3 })
    assert.throws(() => parsePoolBounds('6..1'), /--dispatchers: MIN \(6\) is above MAX \(1\)/)
    assert.throws(() => parsePoolBounds('1-6'), /--dispatchers must be MIN\.\.MAX/)
    assert.throws(() => parsePoolBounds('0..0'), /MAX must be from 1/)
    assert.deepEqual(parseZones('a,b,c'), ['a', 'b', 'c'])
    assert.throws(() => parseZones('a,,c'), /--zones must be zone names/)
    assert.throws(() => parseZones('a,a'), /--zones names a zone twice/)
    assert.deepEqual(
      [0, 1, 2, 3, 4].map(n => zoneOf(n, ['a', 'b', 'c'])),
      ['a', 'b', 'c', 'a', 'b']
    )
    assert.deepEqual(parseStatefulSetRef('shoal/shoal-dispatcher'), { namespace: 'shoal', name: 'shoal-dispatcher' })
    assert.throws(() => parseStatefulSetRef('shoal-dispatcher'), /--statefulset must be NAMESPACE\/NAME/)
  })
})
