import assert from 'node:assert/strict'
import { test } from 'node:test'
import { KafkaSourceKind } from '../../src/api/index.ts'
import { desiredStateOf, objectReference, qualifiedPlural, sameDesiredState } from '../../src/cli/resources.ts'
import { kafkaSource } from './fixtures.ts'

test('names as kubectl prints them', () => {
  assert.equal(objectReference(KafkaSourceKind, 'x'), 'kafkasource.sources.knative.dev/x')
  assert.equal(qualifiedPlural(KafkaSourceKind), 'kafkasources.sources.knative.dev')
})

test('the applied body drops status and server-set metadata, and carries the namespace', () => {
  const body = desiredStateOf(kafkaSource('x', { labels: { a: 'b' } }), 'team-a')
  assert.equal(body['status'], undefined)
  assert.deepEqual(body['metadata'], { name: 'x', namespace: 'team-a', labels: { a: 'b' } })
  assert.deepEqual(body['spec'], kafkaSource('x').spec)
})

test('desired state compares spec, labels and annotations, absent = empty', () => {
  const live = kafkaSource('x')
  const manifest = {
    apiVersion: live.apiVersion,
    kind: live.kind,
    metadata: { name: 'x', labels: {} },
    spec: live.spec
  }
  assert.equal(sameDesiredState(manifest, live), true)
  assert.equal(sameDesiredState({ ...manifest, metadata: { name: 'x', labels: { a: 'b' } } }, live), false)
  assert.equal(sameDesiredState({ ...manifest, spec: { ...live.spec, consumers: 3 } }, live), false)
})
