import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { leaderWrites } from '../../src/leader/index.ts'
import type { LeaderWrite, LeaderWritesInput } from '../../src/leader/index.ts'
import type { PendingInfo, Placement } from '../../src/scheduler/index.ts'
import { contractKey } from '../../src/store/index.ts'
import type { ContractRecord, PlacementsRecord, StoredEntry } from '../../src/store/index.ts'

const NOW = '2026-12-01T10:00:00.000Z'
const EARLIER = '2026-12-01T09:00:00.000Z'
const KS = 'KafkaSource/default/orders'
const PING = 'PingSource/default/tick'

function entry(key: string, resourceVersion = '5'): StoredEntry {
  const [kind = '', namespace = '', name = ''] = key.split('/')
  return {
    key,
    bucket: 0,
    resourceVersion,
    object: {
      apiVersion: 'sources.knative.dev/v1',
      kind,
      metadata: { name, namespace, uid: `uid-${name}`, generation: 1, creationTimestamp: EARLIER },
      spec: {}
    },
    status: undefined
  }
}

/** A leader's view: the store's entries, the log's records and the scheduler's result, all given as values. */
function input(options: {
  readonly keys: readonly string[]
  readonly entries?: readonly StoredEntry[]
  readonly placements?: readonly PlacementsRecord[]
  readonly contracts?: readonly ContractRecord[]
  readonly placed?: Readonly<Record<string, readonly Placement[]>>
  readonly pending?: Readonly<Record<string, PendingInfo>>
  readonly incarnations?: Readonly<Record<string, number>>
}): LeaderWritesInput {
  const entries = new Map((options.entries ?? []).map(e => [e.key, e]))
  return {
    keys: options.keys,
    placements: new Map((options.placements ?? []).map(p => [p.source, p])),
    contracts: new Map((options.contracts ?? []).map(c => [contractKey(c.dispatcher, c.source), c])),
    scales: new Map(options.keys.map(k => [k, { desired: 2, by: 'spec' as const }])),
    epoch: 4,
    revision: 9,
    now: NOW,
    entry: key => entries.get(key),
    placed: key => options.placed?.[key],
    pending: key => options.pending?.[key],
    incarnation: dispatcher => options.incarnations?.[dispatcher]
  }
}

function placementsRecord(source: string, placements: readonly Placement[], extra: Partial<PlacementsRecord> = {}) {
  return {
    source,
    slot: source.startsWith('KafkaSource/') ? ('consumer' as const) : ('schedule' as const),
    placements: placements.map(p => ({ podName: p.podName, vreplicas: p.vreplicas })),
    pending: 0,
    epoch: 3,
    revision: 8,
    since: EARLIER,
    scale: { desired: 2, by: 'spec' as const },
    ...extra
  }
}

function contract(dispatcher: string, source: string, extra: Partial<ContractRecord> = {}): ContractRecord {
  return {
    dispatcher,
    source,
    slot: source.startsWith('KafkaSource/') ? 'consumer' : 'schedule',
    vreplicas: 1,
    resourceVersion: '5',
    epoch: 3,
    ...extra
  }
}

function kinds(writes: readonly LeaderWrite[]): string[] {
  return writes.map(w => `${w.kind} ${w.key} ${w.record === null ? 'tombstone' : 'value'}`)
}

describe('leaderWrites: what the leader appends for a scheduling result', () => {
  it('writes a new source’s placements and one contract per dispatcher, stamped with the term’s epoch', () => {
    const placed = [
      { podName: 'dispatcher-0', vreplicas: 1 },
      { podName: 'dispatcher-1', vreplicas: 1 }
    ]
    const writes = leaderWrites(input({ keys: [KS], entries: [entry(KS)], placed: { [KS]: placed } }))
    assert.deepEqual(writes, [
      {
        kind: 'placements',
        key: KS,
        record: { ...placementsRecord(KS, placed), epoch: 4, revision: 9, since: NOW }
      },
      {
        kind: 'contract',
        dispatcher: 'dispatcher-0',
        key: contractKey('dispatcher-0', KS),
        record: contract('dispatcher-0', KS, { epoch: 4 })
      },
      {
        kind: 'contract',
        dispatcher: 'dispatcher-1',
        key: contractKey('dispatcher-1', KS),
        record: contract('dispatcher-1', KS, { epoch: 4 })
      }
    ])
  })

  it('writes nothing when the log already says what the scheduler has', () => {
    const placed = [{ podName: 'dispatcher-0', vreplicas: 1 }]
    const writes = leaderWrites(
      input({
        keys: [KS],
        entries: [entry(KS)],
        placements: [placementsRecord(KS, placed)],
        contracts: [contract('dispatcher-0', KS, { heldSince: '12' })],
        placed: { [KS]: placed }
      })
    )
    assert.deepEqual(writes, [])
  })

  it('rewrites only the contracts of a source whose resourceVersion moved, keeping the offset that granted them', () => {
    const placed = [{ podName: 'dispatcher-0', vreplicas: 1 }]
    const writes = leaderWrites(
      input({
        keys: [KS],
        entries: [entry(KS, '6')],
        placements: [placementsRecord(KS, placed)],
        contracts: [contract('dispatcher-0', KS, { heldSince: '12' })],
        placed: { [KS]: placed }
      })
    )
    assert.deepEqual(writes, [
      {
        kind: 'contract',
        dispatcher: 'dispatcher-0',
        key: contractKey('dispatcher-0', KS),
        record: contract('dispatcher-0', KS, { resourceVersion: '6', epoch: 4, heldSince: '12' })
      }
    ])
  })

  it('tombstones the placements and every contract of a deleted source', () => {
    const placed = [
      { podName: 'dispatcher-0', vreplicas: 1 },
      { podName: 'dispatcher-1', vreplicas: 1 }
    ]
    const writes = leaderWrites(
      input({
        keys: [KS],
        placements: [placementsRecord(KS, placed)],
        contracts: [contract('dispatcher-0', KS), contract('dispatcher-1', KS)]
      })
    )
    assert.deepEqual(kinds(writes), [
      `placements ${KS} tombstone`,
      `contract ${contractKey('dispatcher-0', KS)} tombstone`,
      `contract ${contractKey('dispatcher-1', KS)} tombstone`
    ])
  })

  it('gives a schedule’s new owner the dispatcher it left, with the offset that had granted it and its incarnation', () => {
    const writes = leaderWrites(
      input({
        keys: [PING],
        entries: [entry(PING)],
        placements: [placementsRecord(PING, [{ podName: 'dispatcher-0', vreplicas: 1 }])],
        contracts: [contract('dispatcher-0', PING, { heldSince: '40' })],
        placed: { [PING]: [{ podName: 'dispatcher-1', vreplicas: 1 }] },
        incarnations: { 'dispatcher-0': 7 }
      })
    )
    assert.deepEqual(kinds(writes), [
      `placements ${PING} value`,
      `contract ${contractKey('dispatcher-1', PING)} value`,
      `contract ${contractKey('dispatcher-0', PING)} tombstone`
    ])
    const granted = writes[1]?.record as ContractRecord
    assert.deepEqual(granted.movedFrom, [{ dispatcher: 'dispatcher-0', at: NOW, offset: '40', incarnation: 7 }])
    assert.equal((writes[0]?.record as PlacementsRecord).left, undefined)
  })

  it('keeps the holders a pending schedule left in its placements record, for the owner it gets later', () => {
    const pending: PendingInfo = { count: 1, reason: 'InsufficientCapacity', message: 'no schedule slot' }
    const leftPending = leaderWrites(
      input({
        keys: [PING],
        entries: [entry(PING)],
        placements: [placementsRecord(PING, [{ podName: 'dispatcher-0', vreplicas: 1 }])],
        contracts: [contract('dispatcher-0', PING, { heldSince: '40' })],
        placed: { [PING]: [] },
        pending: { [PING]: pending }
      })
    )
    const record = leftPending[0]?.record as PlacementsRecord
    assert.deepEqual(record.left, [{ dispatcher: 'dispatcher-0', at: NOW, offset: '40' }])
    assert.equal(record.reason, 'InsufficientCapacity')
    assert.equal(record.message, 'no schedule slot')
    assert.equal(record.since, NOW, 'pending starts now')

    const placedLater = leaderWrites(
      input({
        keys: [PING],
        entries: [entry(PING)],
        placements: [record],
        placed: { [PING]: [{ podName: 'dispatcher-2', vreplicas: 1 }] }
      })
    )
    assert.deepEqual(kinds(placedLater), [
      `placements ${PING} value`,
      `contract ${contractKey('dispatcher-2', PING)} value`
    ])
    assert.equal((placedLater[0]?.record as PlacementsRecord).left, undefined)
    assert.deepEqual((placedLater[1]?.record as ContractRecord).movedFrom, record.left)
  })

  it('carries no moves for a KafkaSource: its consumer group keeps the offsets', () => {
    const writes = leaderWrites(
      input({
        keys: [KS],
        entries: [entry(KS)],
        placements: [placementsRecord(KS, [{ podName: 'dispatcher-0', vreplicas: 1 }])],
        contracts: [contract('dispatcher-0', KS, { heldSince: '40' })],
        placed: { [KS]: [{ podName: 'dispatcher-1', vreplicas: 1 }] }
      })
    )
    assert.equal((writes[1]?.record as ContractRecord).movedFrom, undefined)
    assert.equal((writes[0]?.record as PlacementsRecord).left, undefined)
  })
})
