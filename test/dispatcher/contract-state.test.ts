import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { ContractState } from '../../src/dispatcher/index.ts'
import { bucketOf, contractKey, contractPartitionOf } from '../../src/store/index.ts'
import type { ContractRecord } from '../../src/store/index.ts'

function placement(dispatcher: string, source: string, extra: Partial<ContractRecord> = {}): ContractRecord {
  return { dispatcher, source, slot: 'consumer', vreplicas: 2, resourceVersion: '10', epoch: 1, ...extra }
}

describe('ContractState', () => {
  it("keeps this dispatcher's placements by source key, and drops one on its tombstone", () => {
    const state = new ContractState('dispatcher-1')
    const key = contractKey('dispatcher-1', 'KafkaSource/default/a')
    assert.equal(
      state.apply({ offset: 0n, key, value: placement('dispatcher-1', 'KafkaSource/default/a') }).kind,
      'changed'
    )
    assert.equal(state.entries.get('KafkaSource/default/a')?.vreplicas, 2)
    assert.equal(state.apply({ offset: 1n, key, value: 'tombstone' }).kind, 'changed')
    assert.equal(state.entries.size, 0)
    assert.equal(state.offset, 1n)
  })

  it("ignores other dispatchers' records but counts their offsets as read", () => {
    const state = new ContractState('dispatcher-1')
    for (const [offset, id] of [
      [0n, 'dispatcher-10'],
      [1n, 'dispatcher-11']
    ] as const) {
      const result = state.apply({
        offset,
        key: contractKey(id, 'KafkaSource/default/a'),
        value: placement(id, 'KafkaSource/default/a')
      })
      assert.equal(result.kind, 'unchanged')
    }
    assert.equal(state.entries.size, 0)
    assert.equal(state.offset, 1n)
  })

  it('reports a rewrite with the same content as unchanged', () => {
    const state = new ContractState('dispatcher-1')
    const key = contractKey('dispatcher-1', 'PingSource/default/p')
    const record = placement('dispatcher-1', 'PingSource/default/p', { slot: 'schedule', vreplicas: 1 })
    state.apply({ offset: 0n, key, value: record })
    assert.equal(state.apply({ offset: 1n, key, value: { ...record } }).kind, 'unchanged')
    assert.equal(state.apply({ offset: 2n, key, value: { ...record, resourceVersion: '11' } }).kind, 'changed')
  })

  it('sums vreplicas per slot kind', () => {
    const state = new ContractState('dispatcher-1')
    state.apply({
      offset: 0n,
      key: 'dispatcher-1/KafkaSource/default/a',
      value: placement('dispatcher-1', 'KafkaSource/default/a', { vreplicas: 3 })
    })
    state.apply({
      offset: 1n,
      key: 'dispatcher-1/KafkaSource/default/b',
      value: placement('dispatcher-1', 'KafkaSource/default/b', { vreplicas: 4 })
    })
    state.apply({
      offset: 2n,
      key: 'dispatcher-1/PingSource/default/p',
      value: placement('dispatcher-1', 'PingSource/default/p', { slot: 'schedule', vreplicas: 1 })
    })
    assert.deepEqual(state.used(), { consumers: 7, schedules: 1 })
  })

  it('skips a malformed record, or one whose key and value disagree', () => {
    const state = new ContractState('dispatcher-1')
    assert.equal(
      state.apply({ offset: 0n, key: 'dispatcher-1/KafkaSource/default/a', value: { vreplicas: 'two' } }).kind,
      'skipped'
    )
    assert.equal(
      state.apply({
        offset: 1n,
        key: 'dispatcher-1/KafkaSource/default/a',
        value: placement('dispatcher-1', 'KafkaSource/default/b')
      }).kind,
      'skipped'
    )
    assert.equal(state.entries.size, 0)
  })
})

describe('contractPartitionOf', () => {
  it('is the bucket hash of the dispatcher id, so leader and dispatcher agree', () => {
    for (const id of ['dispatcher-0', 'dispatcher-1', 'dispatcher-17']) {
      assert.equal(contractPartitionOf(id, 16), bucketOf(id, 16))
      assert.ok(contractPartitionOf(id, 16) < 16)
    }
  })
})
