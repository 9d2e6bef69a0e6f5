import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { resourceTarget } from '../../src/server/resources.ts'

describe('resourceTarget', () => {
  const ks = { group: 'sources.knative.dev', version: 'v1beta1', plural: 'kafkasources' }
  const dispatchers = { group: 'shoal.dev', version: 'v1alpha1', plural: 'dispatchers' }

  it('names a collection, in a namespace or across all, and one object', () => {
    const all = resourceTarget('/p', ks)
    assert.equal(all.kind === 'collection' && all.namespace, undefined)
    const one = resourceTarget('/p', { ...ks, namespace: 'team-a', name: 'orders' })
    assert.equal(one.kind, 'object')
    assert.equal(one.kind === 'object' && `${one.info.kind}/${one.namespace}/${one.name}`, 'KafkaSource/team-a/orders')
  })

  it('gives cluster-wide kinds the empty namespace, and refuses a namespace in their paths', () => {
    const one = resourceTarget('/p', { ...dispatchers, name: 'd-1' })
    assert.equal(one.kind === 'object' && one.namespace, '')
    const path = '/apis/shoal.dev/v1alpha1/namespaces/x/dispatchers'
    const refused = resourceTarget(path, { ...dispatchers, namespace: 'x' })
    assert.equal(refused.kind, 'refused')
    assert.equal(refused.kind === 'refused' && refused.status.code, 404)
    assert.equal(
      refused.kind === 'refused' && refused.status.message,
      'dispatchers are cluster-wide: use /apis/shoal.dev/v1alpha1/dispatchers'
    )
  })

  it('refuses one namespaced object named without its namespace, and an unknown kind naming what is served', () => {
    const path = '/apis/sources.knative.dev/v1beta1/kafkasources/orders'
    const noNamespace = resourceTarget(path, { ...ks, name: 'orders' })
    assert.equal(
      noNamespace.kind === 'refused' && noNamespace.status.message,
      `the server could not find the requested resource (${path})`
    )
    const unknown = resourceTarget('/p', { ...ks, plural: 'kafkatopics' })
    assert.equal(unknown.kind === 'refused' && unknown.status.reason, 'NotFound')
    assert.match(
      unknown.kind === 'refused' ? unknown.status.message : '',
      /^the server could not find the requested resource: sources.knative.dev\/v1beta1 kafkatopics; it serves .*sources.knative.dev\/v1beta1 kafkasources/
    )
  })
})
