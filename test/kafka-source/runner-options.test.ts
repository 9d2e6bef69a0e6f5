import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { SourceRunner } from '../../src/kafka-source/index.ts'
import type { SourceRunnerOptions } from '../../src/kafka-source/index.ts'

const valid: SourceRunnerOptions = {
  brokers: ['127.0.0.1:9'],
  source: { key: 'KafkaSource/ns/a', groupId: 'g', topics: ['t'], initialOffset: 'latest', ordering: 'ordered' },
  vreplicas: 0,
  dispatcherId: 'dispatcher-0',
  deliver: async () => 'delivered'
}

describe('SourceRunner options', () => {
  it('names every wrong field', () => {
    assert.throws(
      () =>
        new SourceRunner({
          ...valid,
          vreplicas: -1,
          dispatcherId: '',
          source: { ...valid.source, topics: [], maxInFlight: 0 }
        }),
      (error: { code: string; fields: Array<{ path: string }> }) => {
        assert.equal(error.code, 'SHOAL_INVALID')
        assert.deepEqual(
          error.fields.map(f => f.path),
          ['dispatcherId', 'vreplicas', 'source.topics', 'source.maxInFlight']
        )
        return true
      }
    )
  })

  it('names wrong batch limits', () => {
    assert.throws(
      () =>
        new SourceRunner({
          ...valid,
          batching: { limits: { maxEvents: 0, maxBytes: 0, maxWaitMs: -1 }, deliver: async () => [] }
        }),
      (error: { code: string; fields: Array<{ path: string }> }) => {
        assert.equal(error.code, 'SHOAL_INVALID')
        assert.deepEqual(
          error.fields.map(f => f.path),
          ['batching.limits.maxEvents', 'batching.limits.maxBytes', 'batching.limits.maxWaitMs']
        )
        return true
      }
    )
  })

  it('runs no member at zero vreplicas, refuses a negative count, and refuses scaling once closed', async () => {
    const runner = new SourceRunner(valid)
    assert.deepEqual(runner.status(), { source: 'KafkaSource/ns/a', groupId: 'g', vreplicas: 0, members: [] })
    await assert.rejects(runner.setVReplicas(-2), { code: 'SHOAL_INVALID' })
    await runner.close()
    await assert.rejects(runner.setVReplicas(1))
  })
})
