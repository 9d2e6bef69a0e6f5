import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { AUTOSCALE_DEFAULTS, decide, initialState } from '../../src/autoscale/index.ts'
import type { AutoscaleConfig, LagObservation, ScaleState } from '../../src/autoscale/index.ts'

const config: AutoscaleConfig = {
  ...AUTOSCALE_DEFAULTS,
  minScale: 0,
  maxScale: 10,
  lagThreshold: 100,
  activationLagThreshold: 0,
  cooldownPeriodMs: 30_000,
  stabilizationWindowMs: 10_000
}
const lag = (totalLag: number, partitions = 12): LagObservation => ({ kind: 'lag', totalLag, partitions })

/** Runs polls in order: [time, observation] → the scale after each. */
function run(c: AutoscaleConfig, start: ScaleState, polls: Array<[number, LagObservation]>): number[] {
  let state = start
  return polls.map(([at, observation]) => {
    state = decide(c, state, observation, at).state
    return state.scale
  })
}

describe('autoscaler decision', () => {
  it('desired = clamp(ceil(lag / threshold), min, min(max, partitions))', () => {
    const at0 = initialState(0, 0)
    assert.equal(decide(config, at0, lag(1), 1).state.scale, 1)
    assert.equal(decide(config, at0, lag(250), 1).state.scale, 3)
    assert.equal(decide(config, at0, lag(5_000), 1).state.scale, 10) // max-scale
    assert.equal(decide(config, at0, lag(5_000, 4), 1).state.scale, 4) // partitions
    assert.equal(decide({ ...config, minScale: 2 }, initialState(2, 0), lag(1), 1).state.scale, 2) // min-scale
  })

  it('wakes a source at zero as soon as lag passes the activation threshold, not before', () => {
    const c = { ...config, activationLagThreshold: 5 }
    const at0 = initialState(0, 0)
    assert.deepEqual(
      [decide(c, at0, lag(5), 1), decide(c, at0, lag(6), 1)].map(d => [d.state.scale, d.reason]),
      [
        [0, 'idle'],
        [1, 'activated']
      ]
    )
  })

  it('keeps one consumer while idle, and goes to min-scale once idle for the cooldown', () => {
    const scales = run(config, initialState(0, 0), [
      [1_000, lag(50)],
      [2_000, lag(0)],
      [20_000, lag(0)],
      [30_500, lag(0)], // idle for 29.5 s: still one
      [31_000, lag(0)] // idle for the 30 s cooldown: min-scale
    ])
    assert.deepEqual(scales, [1, 1, 1, 1, 0])
  })

  it('steps up at once, and steps down between non-zero scales only after the stabilisation window', () => {
    const scales = run(config, initialState(1, 0), [
      [1_000, lag(800)], // up to 8 at once
      [2_000, lag(300)], // wants 3: the window still holds 8
      [9_000, lag(300)],
      [12_000, lag(300)], // the 8 left the window
      [13_000, lag(250)]
    ])
    assert.deepEqual(scales, [8, 8, 8, 3, 3])
  })

  it('holds the scale while the lag cannot be read, and says why', () => {
    const decision = decide(config, initialState(4, 0), { kind: 'unreadable', reason: 'broker down' }, 60_000)
    assert.equal(decision.state.scale, 4)
    assert.equal(decision.reason, 'held')
    assert.equal(decision.message, 'broker down')
  })

  it('never stays above a lowered max-scale', () => {
    const d = decide({ ...config, maxScale: 2 }, initialState(8, 0), lag(800), 1_000)
    assert.equal(d.state.scale, 2)
  })
})
