import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'

// Guards test/setup/fast-check.ts: without it (a test process started without scripts/test.sh's --import), fast-check
// caps this array at about 20 elements whatever its maxLength, and the property tests explore less than they claim.
describe("the tests' fast-check configuration", () => {
  it('makes an explicit maxLength the real bound of a generated array', () => {
    const lengths = fc
      .sample(fc.array(fc.integer(), { minLength: 5, maxLength: 60 }), { numRuns: 500, seed: 16 })
      .map(array => array.length)
    assert.ok(Math.max(...lengths) > 30, `longest of 500 arrays: ${Math.max(...lengths)} elements`)
    assert.ok(Math.max(...lengths) <= 60)
  })
})
