import assert from 'node:assert/strict'
import { test } from 'node:test'
import { age, humanDuration } from '../../src/cli/age.ts'

const s = 1000
const m = 60 * s
const h = 60 * m
const d = 24 * h

test('humanDuration reads like kubectl AGE', () => {
  const cases: [number, string][] = [
    [-1500, '0s'],
    [-3 * s, '<invalid>'],
    [0, '0s'],
    [5 * s, '5s'],
    [119 * s, '119s'],
    [2 * m, '2m'],
    [3 * m + 20 * s, '3m20s'],
    [10 * m + 30 * s, '10m'],
    [179 * m, '179m'],
    [3 * h, '3h'],
    [5 * h + 7 * m, '5h7m'],
    [8 * h + 59 * m, '8h'],
    [47 * h, '47h'],
    [2 * d, '2d'],
    [2 * d + 4 * h, '2d4h'],
    [8 * d, '8d'],
    [400 * d, '400d'],
    [2 * 365 * d, '2y'],
    [3 * 365 * d + 10 * d, '3y10d'],
    [9 * 365 * d, '9y']
  ]
  for (const [ms, want] of cases) assert.equal(humanDuration(ms), want, `${ms} ms`)
})

test('age is relative to now and tolerates missing or bad timestamps', () => {
  const now = Date.parse('2024-05-01T12:00:00Z')
  assert.equal(age('2024-05-01T11:57:00Z', now), '3m')
  assert.equal(age(undefined, now), '<unknown>')
  assert.equal(age('yesterday', now), '<unknown>')
})
