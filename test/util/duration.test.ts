import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { notADuration, parseDuration } from '../../src/util/index.ts'

describe('parseDuration', () => {
  it('reads a number with one unit of ms, s, m or h', () => {
    assert.equal(parseDuration('10s'), 10_000)
    assert.equal(parseDuration('2.5s'), 2_500)
    assert.equal(parseDuration('500ms'), 500)
    assert.equal(parseDuration('1m'), 60_000)
    assert.equal(parseDuration('1h'), 3_600_000)
    assert.equal(parseDuration(' 30s '), 30_000)
  })

  it('reads a bare number as seconds only when asked to', () => {
    assert.equal(parseDuration('10'), undefined)
    assert.equal(parseDuration('30', 'seconds'), 30_000)
    assert.equal(parseDuration('1.5', 'seconds'), 1_500)
    assert.equal(parseDuration('0', 'seconds'), 0)
  })

  it('refuses negative, ISO-8601, compound and unknown forms', () => {
    for (const text of ['-1s', '-1', 'PT1S', '1m30s', '10us', 's', '', '1e3s']) {
      assert.equal(parseDuration(text, 'seconds'), undefined, text)
    }
    assert.equal(parseDuration(`${Number.MAX_SAFE_INTEGER}h`), undefined)
  })

  it('names the flag or annotation in its message', () => {
    assert.equal(
      notADuration('--liveness-timeout', 'soon'),
      '--liveness-timeout must be a duration like 10s, 2m or 500ms, not "soon"'
    )
    assert.match(
      notADuration('--request-timeout', 'x', 'seconds'),
      /^--request-timeout must be seconds \("30"\) or a duration/
    )
  })
})
