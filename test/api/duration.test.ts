import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { parseIsoDuration } from '../../src/api/index.ts'
import { catchShoal } from './helpers.ts'

describe('parseIsoDuration', () => {
  for (const [text, ms] of [
    ['PT0.5S', 500],
    ['PT0,5S', 500],
    ['PT1S', 1_000],
    ['PT10S', 10_000],
    ['PT1M', 60_000],
    ['PT1H', 3_600_000],
    ['PT1H30M', 5_400_000],
    ['PT1.5H', 5_400_000],
    ['P1D', 86_400_000],
    ['P1DT2H', 93_600_000],
    ['P1W', 604_800_000],
    ['P1M', 30 * 86_400_000],
    ['P1Y', 365 * 86_400_000],
    ['PT0S', 0],
    ['PT0.001S', 1],
    ['PT100000S', 100_000_000]
  ] as const) {
    it(`${text} is ${ms} ms`, () => assert.equal(parseIsoDuration(text), ms))
  }

  for (const text of [
    '',
    'P',
    'PT',
    'P1DT',
    '1S',
    'PT1',
    'T1S',
    'pt1s',
    '-PT1S',
    'PT1.5M30S',
    'P1H',
    'PT1D',
    ' PT1S',
    'PT1S ',
    'PT.5S',
    'P1Y1Y',
    'P99999999999999Y'
  ]) {
    it(`${JSON.stringify(text)} is not a duration`, () => {
      const error = catchShoal(() => parseIsoDuration(text), 'SHOAL_INVALID')
      assert.match(error.message, /not an ISO-8601 duration/)
    })
  }

  it('sums its components', () => {
    fc.assert(
      fc.property(fc.nat(1000), fc.nat(23), fc.nat(59), fc.nat(59), (d, h, m, s) => {
        const ms = parseIsoDuration(`P${d}DT${h}H${m}M${s}S`)
        assert.equal(ms, ((d * 24 + h) * 60 + m) * 60_000 + s * 1000)
      })
    )
  })
})
