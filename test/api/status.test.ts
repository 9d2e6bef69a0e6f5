import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import {
  DEFAULT_SERVICE_URL_TEMPLATE,
  computeStatus,
  readyDependencies,
  validateResource
} from '../../src/api/index.ts'
import type { SourceResource } from '../../src/api/index.ts'

const t0 = new Date('2025-03-01T10:00:00.123Z')
const t1 = new Date('2025-03-01T10:05:00Z')
// The scheduler's observation: placed. Ready is the AND of SinkProvided and Scheduled.
const scheduled = [{ type: 'Scheduled', status: 'True' as const }]
const options = { serviceUrlTemplate: DEFAULT_SERVICE_URL_TEMPLATE, now: t0, observations: scheduled }

function ping(sink: unknown, generation = 2): SourceResource {
  return validateResource({
    apiVersion: 'sources.knative.dev/v1',
    kind: 'PingSource',
    metadata: { name: 'beat', namespace: 'ns', generation },
    spec: { sink }
  })
}

describe('computeStatus', () => {
  it('is Ready with SinkProvided when the sink resolves', () => {
    const status = computeStatus(ping({ ref: { apiVersion: 'v1', kind: 'Service', name: 'display' } }), options)
    assert.deepEqual(status, {
      observedGeneration: 2,
      sinkUri: 'http://display.ns.svc.cluster.local',
      conditions: [
        { type: 'Ready', status: 'True', lastTransitionTime: '2025-03-01T10:00:00Z' },
        { type: 'Scheduled', status: 'True', lastTransitionTime: '2025-03-01T10:00:00Z' },
        { type: 'SinkProvided', status: 'True', lastTransitionTime: '2025-03-01T10:00:00Z' }
      ]
    })
    assert.ok(Object.isFrozen(status) && Object.isFrozen(status.conditions[0]))
  })

  it('carries the sink CA certificates', () => {
    const CACerts = '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----'
    const status = computeStatus(ping({ uri: 'https://sink.example.com', CACerts }), options)
    assert.equal(status.sinkCACerts, CACerts)
  })

  it('is not Ready, with the SinkProvided reason, when the sink does not resolve', () => {
    const status = computeStatus(ping({ ref: { apiVersion: 'v1', kind: 'Service', name: 'display' } }), {
      ...options,
      serviceUrlTemplate: 'not a url {name}'
    })
    assert.equal(status.sinkUri, undefined)
    const [ready, , sink] = status.conditions
    assert.equal(sink?.status, 'False')
    assert.equal(sink?.reason, 'InvalidServiceUrlTemplate')
    assert.deepEqual(
      [ready?.type, ready?.status, ready?.reason, ready?.message],
      ['Ready', 'False', sink?.reason, sink?.message]
    )
  })

  it('keeps lastTransitionTime while a status holds, and moves it when the status changes', () => {
    const source = ping({ ref: { apiVersion: 'v1', kind: 'Service', name: 'display' } })
    const first = computeStatus(source, options)
    const same = computeStatus(source, { ...options, now: t1, previous: first })
    assert.deepEqual(same.conditions, first.conditions)
    const broken = computeStatus(source, { ...options, now: t1, previous: first, serviceUrlTemplate: '{name}' })
    for (const condition of broken.conditions.filter(c => c.type !== 'Scheduled')) {
      assert.equal(condition.lastTransitionTime, '2025-03-01T10:05:00Z')
    }
  })

  it('ANDs the observed dependencies into Ready, and keeps other observations as they are', () => {
    const source = ping({ uri: 'http://sink.example.com' })
    const deps = readyDependencies.PingSource
    assert.deepEqual(deps, ['SinkProvided', 'Scheduled'])
    const status = computeStatus(source, {
      ...options,
      observations: [
        { type: 'Scheduled', status: 'False', reason: 'NoCapacity', message: 'no schedule slots' },
        { type: 'InitialOffsetsCommitted', status: 'False', reason: 'Later' },
        { type: 'Ready', status: 'True' }
      ]
    })
    assert.deepEqual(
      status.conditions.map(c => [c.type, c.status, c.reason]),
      [
        ['InitialOffsetsCommitted', 'False', 'Later'],
        ['Ready', 'False', 'NoCapacity'],
        ['Scheduled', 'False', 'NoCapacity'],
        ['SinkProvided', 'True', undefined]
      ]
    )
    const unobserved = computeStatus(source, { ...options, observations: [] })
    assert.equal(unobserved.conditions.find(c => c.type === 'Ready')?.status, 'Unknown')
  })

  it('uses observedGeneration 0 for a resource the server has not stamped', () => {
    const source = validateResource({
      apiVersion: 'sources.knative.dev/v1',
      kind: 'PingSource',
      metadata: { name: 'beat' },
      spec: { sink: { uri: 'http://sink.example.com' } }
    })
    assert.equal(computeStatus(source, options).observedGeneration, 0)
  })
})
