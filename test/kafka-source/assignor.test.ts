import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { assignPartitions, balancedCooperativeAssigner } from '../../src/kafka-source/assignor.ts'
import type { MemberClaim } from '../../src/kafka-source/assignor.ts'

const TOPIC = 't'
const counts = (n: number) => new Map([[TOPIC, n]])
const partitionOf = (key: string) => Number(key.split('\u0000')[1])

/** Members as they rejoin after a round: each owns what it was given, in that round's generation. */
function rejoin(ids: readonly string[], given: ReadonlyMap<string, string[]>, generation: number): MemberClaim[] {
  return ids.map(id => ({
    memberId: id,
    topics: [TOPIC],
    owned: [{ topic: TOPIC, partitions: (given.get(id) ?? []).map(partitionOf) }],
    generation: given.has(id) ? generation : -1
  }))
}

/** Rounds until nothing changes (each round's owners rejoin with what they hold); checks every round's safety. */
function settle(start: MemberClaim[], partitions: number): { rounds: number; final: Map<string, string[]> } {
  let claims = start
  let previous = ''
  for (let round = 1; round <= 5; round++) {
    const given = assignPartitions(claims, counts(partitions))
    const seen = new Set<string>()
    for (const [id, keys] of given) {
      for (const key of keys) {
        assert.ok(!seen.has(key), `partition ${key} given twice`)
        seen.add(key)
        // Never to a member while another still owns it.
        for (const other of claims) {
          if (other.memberId === id) continue
          const owns = other.owned.some(o => o.partitions.includes(partitionOf(key)))
          const newer = claims.some(
            c =>
              c.memberId !== other.memberId &&
              c.generation > other.generation &&
              c.owned.some(o => o.partitions.includes(partitionOf(key)))
          )
          assert.ok(!owns || newer, `partition ${key} given to ${id} while ${other.memberId} owns it`)
        }
      }
    }
    const now = JSON.stringify([...given].sort())
    if (now === previous) return { rounds: round, final: given }
    previous = now
    claims = rejoin(
      claims.map(c => c.memberId),
      given,
      round
    )
  }
  assert.fail('no fixpoint within 5 rounds')
}

describe('assignPartitions', () => {
  it('gives a member that joins a full group its share (the case the client’s assignor left empty)', () => {
    // Four members holding 3 each, a fifth joins: it must end with 2, nobody above 3.
    const start: MemberClaim[] = ['a', 'b', 'c', 'd'].map((id, i) => ({
      memberId: id,
      topics: [TOPIC],
      owned: [{ topic: TOPIC, partitions: [3 * i, 3 * i + 1, 3 * i + 2] }],
      generation: 4
    }))
    start.push({ memberId: 'e', topics: [TOPIC], owned: [], generation: -1 })
    const first = assignPartitions(start, counts(12))
    assert.equal(first.get('e')!.length, 0, 'nothing given while its owner still holds it')
    const { final } = settle(start, 12)
    const sizes = [...final.values()].map(k => k.length).sort()
    assert.deepEqual(sizes, [2, 2, 3, 3, 2].sort())
  })

  it('keeps an older claim nobody newer contests: the partition is not given to a second owner', () => {
    const claims: MemberClaim[] = [
      { memberId: 'a', topics: [TOPIC], owned: [{ topic: TOPIC, partitions: [0, 1, 2, 3, 4, 5] }], generation: 5 },
      { memberId: 'b', topics: [TOPIC], owned: [{ topic: TOPIC, partitions: [6, 7, 8, 9, 10, 11] }], generation: 6 },
      { memberId: 'c', topics: [TOPIC], owned: [], generation: -1 }
    ]
    const given = assignPartitions(claims, counts(12))
    assert.deepEqual(given.get('c'), [], 'a and b still own everything: c waits for them to let go')
    assert.equal(given.get('a')!.length + given.get('b')!.length, 8)
  })

  it('converges within two more rounds to a complete, balanced, sticky assignment, whatever the start', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 24 }),
        fc.integer({ min: 1, max: 10 }),
        fc.array(fc.integer({ min: 0, max: 9 }), { maxLength: 24 }),
        fc.array(fc.integer({ min: -1, max: 3 }), { minLength: 10, maxLength: 10 }),
        (partitions, memberCount, ownerOf, generations) => {
          const ids = Array.from({ length: memberCount }, (_, i) => `m${i}`)
          const owned = new Map<string, number[]>(ids.map(id => [id, []]))
          ownerOf.slice(0, partitions).forEach((o, p) => owned.get(ids[o % memberCount]!)!.push(p))
          const start = ids.map((id, i) => ({
            memberId: id,
            topics: [TOPIC],
            owned: [{ topic: TOPIC, partitions: owned.get(id)! }],
            generation: generations[i]!
          }))
          const { rounds, final } = settle(start, partitions)
          assert.ok(rounds <= 3, `settled in ${rounds} rounds`)
          const sizes = [...final.values()].map(k => k.length)
          assert.equal(
            sizes.reduce((a, b) => a + b, 0),
            partitions,
            'every partition assigned'
          )
          assert.ok(Math.max(...sizes) - Math.min(...sizes) <= 1, `balanced: ${sizes.join(',')}`)
        }
      ),
      { numRuns: 500 }
    )
  })

  it('moves nothing in a balanced group when a member rejoins with what it has', () => {
    const claims: MemberClaim[] = ['a', 'b', 'c'].map((id, i) => ({
      memberId: id,
      topics: [TOPIC],
      owned: [{ topic: TOPIC, partitions: [i, i + 3] }],
      generation: 2
    }))
    const given = assignPartitions(claims, counts(6))
    assert.deepEqual(
      [...given].map(([id, keys]) => [id, keys.map(partitionOf)]),
      [
        ['a', [0, 3]],
        ['b', [1, 4]],
        ['c', [2, 5]]
      ]
    )
  })

  it('assigns every topic some member subscribes to, not only the leader’s (the client passes the leader’s own)', () => {
    const metadata = {
      topics: new Map([
        ['t1', { partitionsCount: 2 }],
        ['t2', { partitionsCount: 2 }]
      ])
    }
    const members = new Map([
      ['a', { memberId: 'a', topics: ['t1'], ownedPartitions: [], generationId: -1 }],
      ['b', { memberId: 'b', topics: ['t2'], ownedPartitions: [], generationId: -1 }]
    ])
    const out = balancedCooperativeAssigner('a', members as never, new Set(['t1']), metadata as never)
    const of = (id: string) => [...(out.find(m => m.memberId === id)?.assignments.values() ?? [])]
    assert.deepEqual(of('a'), [{ topic: 't1', partitions: [0, 1] }])
    assert.deepEqual(of('b'), [{ topic: 't2', partitions: [0, 1] }])
  })
})
