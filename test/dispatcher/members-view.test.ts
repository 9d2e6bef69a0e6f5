import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { MembersView } from '../../src/dispatcher/index.ts'
import type { MemberRecord } from '../../src/store/index.ts'

const L = 10_000

function heartbeat(id: string, incarnation: number, extra: Partial<MemberRecord> = {}): MemberRecord {
  return {
    id,
    incarnation,
    ordinal: Number(/-(\d+)$/.exec(id)?.[1] ?? 0),
    zone: 'a',
    node: 'n1',
    capacity: { consumers: 10, schedules: 1000 },
    used: { consumers: 0, schedules: 0 },
    contractOffset: '-1',
    startedAt: '2025-01-01T00:00:00.000Z',
    ...extra
  }
}

/** A view on a hand-driven monotonic clock, started at local time 0. */
function fakeView(): { view: MembersView; advance: (ms: number) => void } {
  let now = 0
  const view = new MembersView({ livenessTimeoutMs: L, clock: () => now })
  return { view, advance: ms => void (now += ms) }
}

describe('MembersView', () => {
  it('shows a heartbeating dispatcher as alive, with what its heartbeat says', () => {
    const { view } = fakeView()
    view.apply({
      id: 'dispatcher-2',
      value: heartbeat('dispatcher-2', 5, { zone: 'b', node: 'n4' }),
      appendTimeMs: 1_000
    })
    const [member] = view.liveDispatchers()
    assert.equal(member?.id, 'dispatcher-2')
    assert.equal(member?.state, 'alive')
    assert.equal(member?.zone, 'b')
    assert.equal(member?.node, 'n4')
    assert.equal(member?.ordinal, 2)
    assert.deepEqual(member?.capacity, { consumers: 10, schedules: 1000 })
    assert.equal(member?.incarnation, 5)
    assert.equal(member?.lastSeen, 1_000)
  })

  it('judges by broker time: the newest append time plus the local time elapsed since', () => {
    const { view, advance } = fakeView()
    // Broker time is far from any local clock: only differences count.
    view.apply({ id: 'dispatcher-0', value: heartbeat('dispatcher-0', 1), appendTimeMs: 5_000_000 })
    view.apply({ id: 'dispatcher-1', value: heartbeat('dispatcher-1', 1), appendTimeMs: 5_000_000 })
    advance(L) // ready from here on
    assert.equal(view.brokerNow(), 5_000_000 + L)
    view.apply({ id: 'dispatcher-1', value: heartbeat('dispatcher-1', 1), appendTimeMs: 5_000_000 + L })
    assert.deepEqual(
      view.liveDispatchers().map(m => m.id),
      ['dispatcher-0', 'dispatcher-1']
    )
    advance(1)
    assert.deepEqual(
      view.liveDispatchers().map(m => m.id),
      ['dispatcher-1']
    )
    assert.equal(view.member('dispatcher-0')?.state, 'dead')
    assert.equal(view.members().length, 2, 'a dead member stays listed until it leaves')
  })

  it('declares nobody dead before it has read for one liveness timeout', () => {
    const { view, advance } = fakeView()
    // A heartbeat from long ago, read by a new leader: the dispatcher may well be alive, its next heartbeat on its way.
    view.apply({ id: 'dispatcher-0', value: heartbeat('dispatcher-0', 1), appendTimeMs: 1_000 })
    view.apply({ id: 'dispatcher-9', value: heartbeat('dispatcher-9', 1), appendTimeMs: 1_000 + 5 * L })
    assert.equal(view.isReady(), false)
    assert.equal(view.member('dispatcher-0')?.state, 'unconfirmed')
    assert.deepEqual(
      view.liveDispatchers().map(m => m.id),
      ['dispatcher-0', 'dispatcher-9']
    )
    advance(L)
    assert.equal(view.isReady(), true)
    assert.equal(view.readySince, L)
    assert.deepEqual(
      view.liveDispatchers().map(m => m.id),
      ['dispatcher-9']
    )
  })

  it('drops a member at once on its tombstone', () => {
    const { view } = fakeView()
    view.apply({ id: 'dispatcher-0', value: heartbeat('dispatcher-0', 1), appendTimeMs: 1_000 })
    assert.equal(view.apply({ id: 'dispatcher-0', value: 'tombstone', appendTimeMs: 1_001 }).kind, 'changed')
    assert.deepEqual(view.members(), [])
  })

  it('keeps the newest incarnation: an older process with the same id is ignored, even after a tombstone', () => {
    const { view } = fakeView()
    view.apply({ id: 'dispatcher-0', value: heartbeat('dispatcher-0', 7, { node: 'new' }), appendTimeMs: 1_000 })
    const stale = view.apply({
      id: 'dispatcher-0',
      value: heartbeat('dispatcher-0', 6, { node: 'old' }),
      appendTimeMs: 1_001
    })
    assert.equal(stale.kind, 'ignored')
    assert.equal(view.member('dispatcher-0')?.node, 'new')
    // The older process leaving does not remove the newer one.
    view.apply({ id: 'dispatcher-0', value: 'tombstone', appendTimeMs: 1_002, tombstoneIncarnation: 6 })
    assert.equal(view.member('dispatcher-0')?.node, 'new')
    view.apply({ id: 'dispatcher-0', value: 'tombstone', appendTimeMs: 1_003, tombstoneIncarnation: 7 })
    assert.equal(view.member('dispatcher-0'), undefined)
    view.apply({ id: 'dispatcher-0', value: heartbeat('dispatcher-0', 6), appendTimeMs: 1_004 })
    assert.equal(view.member('dispatcher-0'), undefined)
    assert.equal(view.highestIncarnation('dispatcher-0'), 7)
  })

  it('refuses malformed records without forgetting the member', () => {
    const { view } = fakeView()
    view.apply({ id: 'dispatcher-0', value: heartbeat('dispatcher-0', 1), appendTimeMs: 1_000 })
    const result = view.apply({
      id: 'dispatcher-0',
      value: { id: 'dispatcher-0', incarnation: 'x' },
      appendTimeMs: 1_001
    })
    assert.equal(result.kind, 'invalid')
    assert.equal(
      view.apply({ id: 'dispatcher-1', value: heartbeat('dispatcher-0', 2), appendTimeMs: 1_002 }).kind,
      'invalid'
    )
    assert.equal(view.members().length, 1)
  })

  it('lists members by ordinal', () => {
    const { view } = fakeView()
    for (const id of ['dispatcher-10', 'dispatcher-2', 'dispatcher-0']) {
      view.apply({ id, value: heartbeat(id, 1), appendTimeMs: 1_000 })
    }
    assert.deepEqual(
      view.members().map(m => m.id),
      ['dispatcher-0', 'dispatcher-2', 'dispatcher-10']
    )
  })
})
