// The controllers' sticky bucket assignor (src/store/bucket-assignor.ts), pure, against properties fast-check
// explores: every bucket to one member, even shares, and what a member held stays with it — bucket 0 above all,
// since its holder is the scheduler leader.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { assignBuckets, decodeBucketClaim, encodeBucketClaim } from '../../src/store/bucket-assignor.ts'
import type { BucketMember } from '../../src/store/bucket-assignor.ts'

const ids = fc.uniqueArray(fc.constantFrom('m-a', 'm-b', 'm-c', 'm-d', 'm-e', 'm-f'), { minLength: 1, maxLength: 6 })
const claim = (buckets: number) =>
  fc.option(
    fc.record({
      generation: fc.integer({ min: 0, max: 4 }),
      buckets: fc.uniqueArray(fc.integer({ min: -1, max: buckets }), { maxLength: buckets })
    }),
    { nil: undefined }
  )
const scenario = fc
  .integer({ min: 1, max: 12 })
  .chain(bucketCount =>
    ids.chain(memberIds =>
      fc.tuple(
        fc.constant(bucketCount),
        fc.tuple(...memberIds.map(id => claim(bucketCount).map(c => ({ memberId: id, claim: c }))))
      )
    )
  )

/** The member each claim gives a bucket to (the newest generation, uncontested), as the assignor must honour it. */
function uncontested(members: readonly BucketMember[], bucket: number): string | undefined {
  const claims = members.filter(m => m.claim?.buckets.includes(bucket))
  const newest = Math.max(...claims.map(m => m.claim!.generation))
  const best = claims.filter(m => m.claim!.generation === newest)
  return best.length === 1 ? best[0]!.memberId : undefined
}

function invert(shares: Map<string, number[]>): Map<number, string> {
  const owner = new Map<number, string>()
  for (const [id, buckets] of shares) for (const b of buckets) owner.set(b, id)
  return owner
}

test('every bucket goes to exactly one member, and the shares differ by at most one', () => {
  fc.assert(
    fc.property(scenario, ([bucketCount, members]) => {
      const shares = assignBuckets(members, bucketCount)
      assert.deepEqual([...shares.keys()].sort(), members.map(m => m.memberId).sort())
      const all = [...shares.values()].flat().sort((a, b) => a - b)
      assert.deepEqual(
        all,
        Array.from({ length: bucketCount }, (_, i) => i)
      )
      const sizes = [...shares.values()].map(b => b.length)
      assert.ok(Math.max(...sizes) - Math.min(...sizes) <= 1, `shares ${sizes.join(',')}`)
    }),
    { numRuns: 2000 }
  )
})

test('bucket 0 stays with its holder while the holder is a member, and nobody gives up a bucket it may keep', () => {
  fc.assert(
    fc.property(scenario, ([bucketCount, members]) => {
      const shares = assignBuckets(members, bucketCount)
      const owner = invert(shares)
      const holder = uncontested(members, 0)
      if (holder !== undefined && (shares.get(holder)?.length ?? 0) > 0) assert.equal(owner.get(0), holder)
      // A member keeps min(its share, what it held) of what it held.
      for (const [id, buckets] of shares) {
        const held = [...Array(bucketCount).keys()].filter(b => uncontested(members, b) === id)
        const kept = held.filter(b => buckets.includes(b))
        assert.equal(
          kept.length,
          Math.min(held.length, buckets.length),
          `${id} held ${held.join(',')}, got ${buckets.join(',')}`
        )
      }
    }),
    { numRuns: 2000 }
  )
})

test('a controller leaving a balanced group moves none of the buckets the others hold', () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 16 }),
      fc.integer({ min: 2, max: 6 }),
      fc.nat(),
      (bucketCount, size, leaving) => {
        const memberIds = ['m-a', 'm-b', 'm-c', 'm-d', 'm-e', 'm-f'].slice(0, size)
        const first = assignBuckets(
          memberIds.map(memberId => ({ memberId, claim: undefined })),
          bucketCount
        )
        const gone = memberIds[leaving % size]!
        const left = memberIds
          .filter(id => id !== gone)
          .map(memberId => ({ memberId, claim: { generation: 1, buckets: first.get(memberId)! } }))
        const second = assignBuckets(left, bucketCount)
        for (const { memberId } of left) {
          for (const bucket of first.get(memberId)!) assert.ok(second.get(memberId)!.includes(bucket))
        }
        const zero = invert(first).get(0)!
        if (zero !== gone) assert.equal(invert(second).get(0), zero, 'the scheduler leader stays')
        // And when it comes back, it takes only from those above their share.
        const back = assignBuckets(
          [
            ...left.map(m => ({ memberId: m.memberId, claim: { generation: 2, buckets: second.get(m.memberId)! } })),
            { memberId: gone, claim: { generation: 1, buckets: first.get(gone)! } }
          ],
          bucketCount
        )
        assert.equal(invert(back).get(0), invert(second).get(0))
      }
    ),
    { numRuns: 1000 }
  )
})

test('a stale claim loses to a newer one; two claims in one generation give the bucket to neither', () => {
  const shares = assignBuckets(
    [
      { memberId: 'm-a', claim: { generation: 3, buckets: [0, 1] } },
      { memberId: 'm-b', claim: { generation: 5, buckets: [0] } },
      { memberId: 'm-c', claim: undefined }
    ],
    3
  )
  assert.deepEqual(shares.get('m-b'), [0])
  assert.deepEqual(shares.get('m-a'), [1])
  assert.deepEqual(shares.get('m-c'), [2])
  const tie = assignBuckets(
    [
      { memberId: 'm-a', claim: { generation: 5, buckets: [0] } },
      { memberId: 'm-b', claim: { generation: 5, buckets: [0] } }
    ],
    2
  )
  assert.deepEqual(
    [...tie.values()].map(b => b.length),
    [1, 1]
  )
})

test('claims travel as JSON; anything else is no claim', () => {
  assert.deepEqual(decodeBucketClaim(encodeBucketClaim({ generation: 7, buckets: [0, 3] })), {
    generation: 7,
    buckets: [0, 3]
  })
  for (const bad of [
    undefined,
    null,
    Buffer.alloc(0),
    Buffer.from('{'),
    Buffer.from('[]'),
    Buffer.from('{"generation":1}')
  ]) {
    assert.equal(decodeBucketClaim(bad), undefined)
  }
  assert.equal(decodeBucketClaim(Buffer.from('{"generation":1,"buckets":[0.5]}')), undefined)
})
