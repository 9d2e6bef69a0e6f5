import assert from 'node:assert/strict'
import { test } from 'node:test'
import { manifestTarget } from '../../src/cli/manifest-target.ts'

const ks = { apiVersion: 'sources.knative.dev/v1beta1', kind: 'KafkaSource', metadata: { name: 'x' } }
const implicit = { value: 'default', explicit: false }

test('the manifest namespace wins over the default; -n fills in when it names none', () => {
  const own = manifestTarget({ ...ks, metadata: { name: 'x', namespace: 'team-a' } }, 'f', implicit)
  assert.ok(own.ok)
  assert.equal(own.namespace, 'team-a')
  const filled = manifestTarget(ks, 'f', { value: 'team-b', explicit: true })
  assert.ok(filled.ok)
  assert.equal(filled.namespace, 'team-b')
})

test('an explicit -n that contradicts the manifest is an error', () => {
  const target = manifestTarget({ ...ks, metadata: { name: 'x', namespace: 'team-a' } }, 'f', {
    value: 'team-b',
    explicit: true
  })
  assert.equal(target.ok, false)
  if (!target.ok) assert.match(target.message, /"team-a" does not match the namespace "team-b"/)
})

test('an unknown kind or version names what Shoal serves', () => {
  const target = manifestTarget({ ...ks, apiVersion: 'sources.knative.dev/v1alpha1' }, 'f.yaml', implicit)
  assert.equal(target.ok, false)
  if (!target.ok) {
    assert.match(
      target.message,
      /"x" in f\.yaml: no matches for kind "KafkaSource" in version "sources\.knative\.dev\/v1alpha1"/
    )
    assert.match(target.message, /KafkaSource \(sources\.knative\.dev\/v1beta1, sources\.knative\.dev\/v1\)/)
  }
  const v1 = manifestTarget({ ...ks, apiVersion: 'sources.knative.dev/v1' }, 'f.yaml', implicit)
  assert.ok(v1.ok && v1.kind.version === 'v1', 'a v1 KafkaSource goes to the v1 path')
  const bare = manifestTarget({ metadata: { name: 'x' } }, 'f.yaml', implicit)
  assert.equal(bare.ok, false)
})
