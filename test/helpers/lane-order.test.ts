// The order check the churn test, the slow-sink batch test and the SIGKILL drill rely on (lane-order.ts): it must
// pass what at-least-once allows across a member change, and fail each way the order can break.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { LaneOrderLog } from './lane-order.ts'

/** A log of requests answered at once, one lane: each entry is one request's offsets. */
function served(requests: ReadonlyArray<readonly number[]>, unanswered: ReadonlySet<number> = new Set()): LaneOrderLog {
  const log = new LaneOrderLog()
  requests.forEach((offsets, i) => {
    log.arrived('p0', offsets)
    if (!unanswered.has(i)) log.answered('p0', offsets)
  })
  return log
}

describe('LaneOrderLog', () => {
  it('passes records in order, batches of consecutive records, and a redelivery that goes back', () => {
    const report = served([[0], [3, 5], [7], [3, 5], [7], [9]])
    assert.deepEqual(report.check().violations, [])
    assert.equal(report.check().restarts.get('p0'), 1)
  })

  it('passes a request sent again after it was not answered (a retry, or the next owner after a cut)', () => {
    assert.deepEqual(served([[0], [1], [1], [2]], new Set([1])).check().violations, [])
  })

  it('fails a record sent before an earlier one of its lane was answered', () => {
    const log = new LaneOrderLog()
    log.arrived('p0', [0])
    log.arrived('p0', [1])
    log.answered('p0', [0])
    log.answered('p0', [1])
    assert.equal(log.check().violations.length, 1)
  })

  it('fails a lane that skips ahead past a record that was never answered', () => {
    assert.equal(served([[0], [1], [2]], new Set([1])).check().violations.length, 1)
  })

  it('fails a batch whose records are not consecutive in the lane', () => {
    assert.equal(served([[0], [1], [0, 2]]).check().violations.length, 1)
  })
})
