import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { AUTOSCALE_DEFAULTS, autoscaleSetting } from '../../src/autoscale/index.ts'

const keda = { 'autoscaling.eventing.knative.dev/class': 'keda.autoscaling.knative.dev' }

describe('autoscaling annotations', () => {
  it('are off without the KEDA class, or with another class', () => {
    assert.deepEqual(autoscaleSetting(undefined), { kind: 'off' })
    assert.deepEqual(autoscaleSetting({ 'autoscaling.eventing.knative.dev/min-scale': '2' }), { kind: 'off' })
    assert.deepEqual(autoscaleSetting({ 'autoscaling.eventing.knative.dev/class': 'hpa' }), { kind: 'off' })
  })

  it('take the documented defaults: polling every second', () => {
    const setting = autoscaleSetting(keda)
    assert.equal(setting.kind, 'on')
    assert.deepEqual(setting.kind === 'on' && setting.config, AUTOSCALE_DEFAULTS)
    assert.equal(AUTOSCALE_DEFAULTS.pollingIntervalMs, 1_000)
  })

  it('read the current names', () => {
    const setting = autoscaleSetting({
      ...keda,
      'autoscaling.eventing.knative.dev/min-scale': '1',
      'autoscaling.eventing.knative.dev/max-scale': '8',
      'autoscaling.eventing.knative.dev/lag-threshold': '20',
      'autoscaling.eventing.knative.dev/activation-lag-threshold': '5',
      'autoscaling.eventing.knative.dev/polling-interval': '0.5',
      'autoscaling.eventing.knative.dev/cooldown-period': '2m',
      'autoscaling.shoal.dev/stabilization-window': '30s'
    })
    assert.deepEqual(setting, {
      kind: 'on',
      config: {
        minScale: 1,
        maxScale: 8,
        lagThreshold: 20,
        activationLagThreshold: 5,
        pollingIntervalMs: 500,
        cooldownPeriodMs: 120_000,
        stabilizationWindowMs: 30_000
      }
    })
  })

  it('read the legacy names, and the current name wins when both are set', () => {
    const setting = autoscaleSetting({
      'autoscaling.knative.dev/class': 'keda.autoscaling.knative.dev',
      'autoscaling.knative.dev/minScale': '2',
      'autoscaling.knative.dev/maxScale': '4',
      'keda.autoscaling.knative.dev/pollingInterval': '3',
      'keda.autoscaling.knative.dev/cooldownPeriod': '10',
      'keda.autoscaling.knative.dev/kafkaLagThreshold': '7',
      'autoscaling.eventing.knative.dev/max-scale': '6'
    })
    assert.equal(setting.kind, 'on')
    if (setting.kind !== 'on') return
    assert.equal(setting.config.minScale, 2)
    assert.equal(setting.config.maxScale, 6)
    assert.equal(setting.config.pollingIntervalMs, 3_000)
    assert.equal(setting.config.cooldownPeriodMs, 10_000)
    assert.equal(setting.config.lagThreshold, 7)
    // The stabilisation window defaults to the cooldown period.
    assert.equal(setting.config.stabilizationWindowMs, 10_000)
  })

  it('report every bad value by its annotation', () => {
    const setting = autoscaleSetting({
      ...keda,
      'autoscaling.eventing.knative.dev/min-scale': '-1',
      'autoscaling.eventing.knative.dev/lag-threshold': '0',
      'keda.autoscaling.knative.dev/pollingInterval': 'soon'
    })
    assert.equal(setting.kind, 'invalid')
    assert.deepEqual(setting.kind === 'invalid' && setting.fields.map(f => f.path), [
      'metadata.annotations["autoscaling.eventing.knative.dev/min-scale"]',
      'metadata.annotations["autoscaling.eventing.knative.dev/lag-threshold"]',
      'metadata.annotations["keda.autoscaling.knative.dev/pollingInterval"]'
    ])
  })

  it('refuse max-scale below min-scale and a window longer than the cooldown', () => {
    const low = autoscaleSetting({
      ...keda,
      'autoscaling.eventing.knative.dev/min-scale': '5',
      'autoscaling.eventing.knative.dev/max-scale': '2'
    })
    assert.equal(low.kind === 'invalid' && low.fields[0]?.message, 'max-scale 2 is below min-scale 5')
    const long = autoscaleSetting({
      ...keda,
      'autoscaling.eventing.knative.dev/cooldown-period': '10',
      'autoscaling.shoal.dev/stabilization-window': '20'
    })
    assert.equal(long.kind, 'invalid')
  })

  it('read intervals as seconds or with a unit, naming the annotation when it is neither', () => {
    const on = autoscaleSetting({
      ...keda,
      'autoscaling.eventing.knative.dev/polling-interval': '1.5',
      'autoscaling.eventing.knative.dev/cooldown-period': '2m',
      'autoscaling.shoal.dev/stabilization-window': '250ms'
    })
    assert.equal(on.kind, 'on')
    assert.equal(on.config.pollingIntervalMs, 1_500)
    assert.equal(on.config.cooldownPeriodMs, 120_000)
    assert.equal(on.config.stabilizationWindowMs, 250)
    const bad = autoscaleSetting({ ...keda, 'autoscaling.eventing.knative.dev/cooldown-period': 'PT1S' })
    assert.equal(bad.kind, 'invalid')
    assert.match(bad.fields[0]!.path, /cooldown-period/)
  })
})
