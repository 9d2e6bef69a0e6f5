import assert from 'node:assert/strict'
import { test } from 'node:test'
import { KafkaSourceKind } from '../../src/api/index.ts'
import { desiredStateOf, objectReference, qualifiedPlural, sameDesiredState } from '../../src/cli/resources.ts'
import { kafkaSource } from './fixtures.ts'

test('names as kubectl prints them', () => {
  assert.equal(objectReference(KafkaSourceKind, 'x'), 'kafkasource.sources.knative.dev/x')
  assert.equal(qualifiedPlural(KafkaSourceKind), 'kafkasources.sources.knative.dev')
})

test('the applied body drops status and server-set metadata but the resourceVersion, and carries the namespace', () => {
  const source = kafkaSource('x', { labels: { a: 'b' } })
  const body = desiredStateOf(source, 'team-a')
  assert.equal(body['status'], undefined)
  // The resourceVersion stays: it is apply's precondition.
  const { resourceVersion } = source.metadata
  assert.deepEqual(body['metadata'], { name: 'x', namespace: 'team-a', labels: { a: 'b' }, resourceVersion })
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
