import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { deepFreeze } from '../../src/util/index.ts'

describe('deepFreeze', () => {
  it('freezes nested objects and arrays and returns the same value', () => {
    const value = { a: { b: [1, { c: 2 }] } }
    assert.equal(deepFreeze(value), value)
    assert.ok(Object.isFrozen(value.a))
    assert.ok(Object.isFrozen(value.a.b))
    assert.ok(Object.isFrozen(value.a.b[1]))
  })

  it('leaves primitives as they are', () => {
    assert.equal(deepFreeze(3), 3)
    assert.equal(deepFreeze(null), null)
  })
})
