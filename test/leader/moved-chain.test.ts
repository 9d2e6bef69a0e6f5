import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { movedChain } from '../../src/leader/index.ts'
import { checkContractRecord } from '../../src/dispatcher/record-shapes.ts'
import type { MovedFrom } from '../../src/store/index.ts'

describe('movedChain: the dispatchers a schedule left, for its next owner', () => {
  it('names the ones it leaves now, then those they had just got it from, newest first, once each', () => {
    const earlier = new Map<string, MovedFrom[]>([
      [
        'dispatcher-1',
        [
          { dispatcher: 'dispatcher-0', at: '2026-11-30T01:00:00.000Z' },
          { dispatcher: 'dispatcher-5', at: '2026-11-30T00:59:00.000Z' }
        ]
      ]
    ])
    assert.deepEqual(
      movedChain([{ dispatcher: 'dispatcher-1', at: '2026-11-30T01:00:01.000Z', offset: '7', incarnation: 3 }], d =>
        earlier.get(d)
      ),
      [
        { dispatcher: 'dispatcher-1', at: '2026-11-30T01:00:01.000Z', offset: '7', incarnation: 3 },
        { dispatcher: 'dispatcher-0', at: '2026-11-30T01:00:00.000Z' },
        { dispatcher: 'dispatcher-5', at: '2026-11-30T00:59:00.000Z' }
      ]
    )
    // A dispatcher it leaves again is named once per holding: once for the same grant, twice for two.
    assert.deepEqual(
      movedChain([{ dispatcher: 'dispatcher-0', at: 'now', offset: '3' }], () => [
        { dispatcher: 'dispatcher-0', at: 'before', offset: '3' }
      ]),
      [{ dispatcher: 'dispatcher-0', at: 'now', offset: '3' }]
    )
    assert.deepEqual(
      movedChain([{ dispatcher: 'dispatcher-0', at: 'now', offset: '9' }], () => [
        { dispatcher: 'dispatcher-0', at: 'before', offset: '3' }
      ]),
      [
        { dispatcher: 'dispatcher-0', at: 'now', offset: '9' },
        { dispatcher: 'dispatcher-0', at: 'before', offset: '3' }
      ]
    )
    assert.deepEqual(
      movedChain([], () => undefined),
      []
    )
  })

  it('carries at most eight', () => {
    const long = Array.from({ length: 20 }, (_, i) => ({ dispatcher: `dispatcher-${i + 10}`, at: 'earlier' }))
    assert.equal(movedChain([{ dispatcher: 'dispatcher-1', at: 'now' }], () => long).length, 8)
  })

  it('is read back from a contract record, and a malformed one is refused by name', () => {
    const record = {
      dispatcher: 'dispatcher-2',
      source: 'PingSource/ns/a',
      slot: 'schedule',
      vreplicas: 1,
      resourceVersion: '7',
      epoch: 3
    }
    assert.equal(checkContractRecord(record).kind, 'ok')
    assert.equal(
      checkContractRecord({ ...record, movedFrom: [{ dispatcher: 'dispatcher-1', at: '2026-11-30T01:00:00Z' }] }).kind,
      'ok'
    )
    assert.equal(
      checkContractRecord({
        ...record,
        heldSince: '12',
        movedFrom: [{ dispatcher: 'dispatcher-1', at: '2026-11-30T01:00:00Z', offset: '4', incarnation: 2 }]
      }).kind,
      'ok'
    )
    const heldSince = checkContractRecord({ ...record, heldSince: 12 })
    assert.match((heldSince as { reason: string }).reason, /^heldSince:/)
    for (const movedFrom of [
      ['dispatcher-1'],
      [{ dispatcher: 'dispatcher-1' }],
      [{ dispatcher: 1, at: 'x' }],
      [{ dispatcher: 'dispatcher-1', at: '2026-11-30T01:00:00Z', offset: 4 }],
      [{ dispatcher: 'dispatcher-1', at: '2026-11-30T01:00:00Z', incarnation: '2' }],
      'd'
    ]) {
      const checked = checkContractRecord({ ...record, movedFrom })
      assert.equal(checked.kind, 'invalid', JSON.stringify(movedFrom))
      assert.match((checked as { reason: string }).reason, /^movedFrom:/)
    }
  })
})
