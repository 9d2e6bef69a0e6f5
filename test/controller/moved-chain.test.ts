import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { movedChain } from '../../src/controller/scheduler-leader.ts'
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
      movedChain(['dispatcher-1'], '2026-11-30T01:00:01.000Z', d => earlier.get(d)),
      [
        { dispatcher: 'dispatcher-1', at: '2026-11-30T01:00:01.000Z' },
        { dispatcher: 'dispatcher-0', at: '2026-11-30T01:00:00.000Z' },
        { dispatcher: 'dispatcher-5', at: '2026-11-30T00:59:00.000Z' }
      ]
    )
    // A dispatcher it leaves again is named once, with now.
    assert.deepEqual(
      movedChain(['dispatcher-0'], 'now', () => [{ dispatcher: 'dispatcher-0', at: 'before' }]),
      [{ dispatcher: 'dispatcher-0', at: 'now' }]
    )
    assert.deepEqual(
      movedChain([], 'now', () => undefined),
      []
    )
  })

  it('carries at most eight', () => {
    const long = Array.from({ length: 20 }, (_, i) => ({ dispatcher: `dispatcher-${i + 10}`, at: 'earlier' }))
    assert.equal(movedChain(['dispatcher-1'], 'now', () => long).length, 8)
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
    for (const movedFrom of [['dispatcher-1'], [{ dispatcher: 'dispatcher-1' }], [{ dispatcher: 1, at: 'x' }], 'd']) {
      const checked = checkContractRecord({ ...record, movedFrom })
      assert.equal(checked.kind, 'invalid', JSON.stringify(movedFrom))
      assert.match((checked as { reason: string }).reason, /^movedFrom:/)
    }
  })
})
