import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { RemoteClock } from '../../src/util/index.ts'

describe('RemoteClock', () => {
  it('is the newest remote time observed plus the local time elapsed since; older times do not move it back', () => {
    let local = 100
    const clock = new RemoteClock(() => local)
    assert.equal(clock.now(), undefined)
    clock.observe(5_000)
    local = 350
    assert.equal(clock.now(), 5_250)
    clock.observe(4_000)
    assert.equal(clock.newest(), 5_000)
    assert.equal(clock.now(), 5_250)
  })
})
