import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { checkUpdate, validateResource } from '../../src/api/index.ts'
import { edit, expectInvalidPaths } from './helpers.ts'

const base = {
  apiVersion: 'sources.knative.dev/v1beta1',
  kind: 'KafkaSource',
  metadata: { name: 'orders' },
  spec: {
    bootstrapServers: ['kafka:9092'],
    topics: ['orders'],
    consumerGroup: 'knative-kafka-source-abc',
    sink: { uri: 'http://sink.example.com' }
  }
}

describe('checkUpdate', () => {
  const stored = validateResource(base)

  it('accepts an unchanged consumerGroup and any other change', () => {
    const next = validateResource(edit(base, { 'spec.consumers': 4 }))
    assert.equal(checkUpdate(stored, next), next)
  })

  it('keeps the stored consumerGroup when the replacement omits it', () => {
    const next = checkUpdate(stored, validateResource(edit(base, { 'spec.consumerGroup': undefined })))
    assert.ok(next.kind === 'KafkaSource' && Object.isFrozen(next.spec))
    assert.equal(next.spec.consumerGroup, 'knative-kafka-source-abc')
  })

  it('refuses a changed consumerGroup', () => {
    const next = validateResource(edit(base, { 'spec.consumerGroup': 'other' }))
    const messages = expectInvalidPaths(() => checkUpdate(stored, next), ['spec.consumerGroup'])
    assert.match(messages.get('spec.consumerGroup') ?? '', /immutable/)
  })
})
