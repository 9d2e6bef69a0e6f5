import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import type { AimdAnswer, AimdOptions, AimdSample, AimdState } from '../../src/delivery/aimd-limit.ts'
import { AIMD_DEFAULTS, aimdConcurrency, initialAimd, nextAimd } from '../../src/delivery/aimd-limit.ts'

const options: AimdOptions = { ...AIMD_DEFAULTS, max: 64 }

function sample(answer: AimdAnswer, sentAt: number, durationMs = 10, inFlight = 64): AimdSample {
  return { answer, sentAt, durationMs, inFlight }
}

describe('AIMD limit', () => {
  it('starts at the ceiling: a healthy sink is never held back', () => {
    assert.equal(aimdConcurrency(initialAimd(options), options), 64)
  })

  it('halves on an overload answer, once per round trip', () => {
    let state = initialAimd(options)
    state = nextAimd(state, sample('overload', 0), options)
    assert.equal(aimdConcurrency(state, options), 32)
    // Sent before the decrease (at 10): it saw the old load, and does not lower the limit again.
    state = nextAimd(state, sample('overload', 5), options)
    assert.equal(aimdConcurrency(state, options), 32)
    state = nextAimd(state, sample('overload', 11), options)
    assert.equal(aimdConcurrency(state, options), 16)
  })

  it('reads a slow answer as overload, against the lowest latency seen', () => {
    let state = initialAimd(options)
    state = nextAimd(state, sample('ok', 0, 10), options)
    state = nextAimd(state, sample('ok', 20, 60), options)
    assert.equal(aimdConcurrency(state, options), 64, '60 ms is within 2 × 10 ms + 50 ms')
    state = nextAimd(state, sample('ok', 100, 2000), options)
    assert.equal(aimdConcurrency(state, options), 32)
  })

  it('climbs back about one per round trip while answers stay fast and the limit is in use', () => {
    let state: AimdState = { limit: 4, baselineMs: 10, decreasedAt: 0 }
    for (let i = 0; i < 5; i++) state = nextAimd(state, sample('ok', 100 + i, 10, 4), options)
    assert.equal(aimdConcurrency(state, options), 5)
    // An idle sink's limit does not grow: it says nothing about what the sink can take.
    const idle = nextAimd(state, sample('ok', 200, 10, 1), options)
    assert.equal(idle.limit, state.limit)
  })

  const answers = fc.record({
    answer: fc.constantFrom<AimdAnswer>('ok', 'overload', 'other'),
    gapMs: fc.integer({ min: 0, max: 500 }),
    durationMs: fc.integer({ min: 0, max: 5000 }),
    inFlight: fc.integer({ min: 1, max: 200 })
  })

  it('property: the limit stays within [min, max] whatever the answers', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 10 }),
        fc.integer({ min: 0, max: 300 }),
        fc.array(answers),
        (min, extra, seq) => {
          const opts = { ...AIMD_DEFAULTS, min, max: min + extra }
          let state = initialAimd(opts)
          let now = 0
          for (const a of seq) {
            now += a.gapMs
            state = nextAimd(
              state,
              { answer: a.answer, sentAt: now, durationMs: a.durationMs, inFlight: a.inFlight },
              opts
            )
            assert.ok(state.limit >= opts.min && state.limit <= opts.max, `limit ${state.limit}`)
            const c = aimdConcurrency(state, opts)
            assert.ok(Number.isInteger(c) && c >= opts.min && c <= opts.max)
          }
        }
      )
    )
  })

  it('property: an overload answer sent after the last decrease lowers the limit (above the floor)', () => {
    fc.assert(
      fc.property(fc.array(answers), fc.integer({ min: 0, max: 5000 }), (seq, durationMs) => {
        let state = initialAimd(options)
        let now = 0
        for (const a of seq) {
          now += a.gapMs
          state = nextAimd(
            state,
            { answer: a.answer, sentAt: now, durationMs: a.durationMs, inFlight: a.inFlight },
            options
          )
        }
        const sentAt = Math.max(now, state.decreasedAt)
        const next = nextAimd(state, sample('overload', sentAt, durationMs), options)
        const before = aimdConcurrency(state, options)
        if (before > options.min) assert.ok(aimdConcurrency(next, options) < before)
        else assert.equal(aimdConcurrency(next, options), options.min)
      })
    )
  })

  it('property: under sustained fast success in use, the limit climbs back to the ceiling', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 64 }), fc.integer({ min: 1, max: 100 }), (start, baseline) => {
        let state: AimdState = { limit: start, baselineMs: baseline, decreasedAt: 0 }
        let previous = aimdConcurrency(state, options)
        let now = 1
        for (let i = 0; i < 64 * 64; i++) {
          const inUse = aimdConcurrency(state, options)
          state = nextAimd(state, sample('ok', now++, baseline, inUse), options)
          const c = aimdConcurrency(state, options)
          assert.ok(c >= previous, 'never down on fast answers')
          previous = c
        }
        assert.equal(aimdConcurrency(state, options), options.max)
      })
    )
  })
})
