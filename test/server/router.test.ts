import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { controllers, discovery, openApi, readiness } from '../../src/server/cluster.ts'
import { approveRebalance, autoscaling, pool, proposeRebalance } from '../../src/server/leader.ts'
import { sourceOffsets } from '../../src/server/offsets.ts'
import { resources } from '../../src/server/resources.ts'
import { createRouter } from '../../src/server/router.ts'
import { route } from '../../src/server/routes.ts'
import { internalWrite } from '../../src/server/writes.ts'

describe('createRouter', () => {
  const router = createRouter([
    { methods: ['GET'], path: '/a/:x', handler: 'get-a' },
    { methods: ['POST', 'PUT'], path: '/a/:x', handler: 'write-a' },
    { methods: 'any', path: '/a/b', handler: 'never: /a/:x comes first' },
    { methods: 'any', path: '/b/:x/c/:y', handler: 'b' }
  ])

  it('takes the first route whose methods and segments fit', () => {
    assert.deepEqual(router('GET', '/a/b'), { kind: 'matched', handler: 'get-a', params: { x: 'b' } })
    assert.deepEqual(router('PUT', '/a/b'), { kind: 'matched', handler: 'write-a', params: { x: 'b' } })
    assert.deepEqual(router('DELETE', '/a/b'), { kind: 'matched', handler: 'never: /a/:x comes first', params: {} })
  })

  it('matches whole segments only, literals as sent', () => {
    assert.deepEqual(router('GET', '/a'), { kind: 'unmatched' })
    assert.deepEqual(router('GET', '/a/b/c'), { kind: 'unmatched' })
    assert.deepEqual(router('GET', '/b/1/d/2'), { kind: 'unmatched' })
    assert.deepEqual(router('GET', '/%62/1/c/2'), { kind: 'unmatched' })
  })

  it('decodes params, each one segment, and lets a param be empty', () => {
    assert.deepEqual(router('GET', '/b/x%2Fy/c/%C3%A9'), {
      kind: 'matched',
      handler: 'b',
      params: { x: 'x/y', y: 'é' }
    })
    assert.deepEqual(router('GET', '/b//c/'), { kind: 'matched', handler: 'b', params: { x: '', y: '' } })
  })

  it('calls a broken percent-encoding malformed, whether a route fits or not', () => {
    assert.deepEqual(router('GET', '/b/%zz/c/1'), { kind: 'malformed' })
    assert.deepEqual(router('GET', '/nowhere/%zz'), { kind: 'malformed' })
  })
})

describe("the API's route table", () => {
  const handlerOf = (method: string, path: string) => {
    const match = route(method, path)
    return match.kind === 'matched' ? match.handler : match.kind
  }
  const paramsOf = (method: string, path: string) => {
    const match = route(method, path)
    return match.kind === 'matched' ? match.params : undefined
  }

  it('serves the fixed paths on their methods, and nothing on the others', () => {
    assert.equal(handlerOf('GET', '/readyz'), readiness)
    assert.equal(handlerOf('DELETE', '/openapi.json'), openApi)
    assert.equal(handlerOf('GET', '/apis'), discovery)
    assert.equal(handlerOf('POST', '/internal/v1/writes'), internalWrite)
    assert.equal(handlerOf('GET', '/internal/v1/writes'), 'unmatched')
    assert.equal(handlerOf('GET', '/shoal/v1/rebalance'), proposeRebalance)
    assert.equal(handlerOf('POST', '/shoal/v1/rebalance'), approveRebalance)
    assert.equal(handlerOf('PUT', '/shoal/v1/rebalance'), 'unmatched')
    assert.equal(handlerOf('GET', '/shoal/v1/autoscaling'), autoscaling)
    assert.equal(handlerOf('GET', '/shoal/v1/pool'), pool)
    assert.equal(handlerOf('POST', '/shoal/v1/pool'), 'unmatched')
    assert.equal(handlerOf('GET', '/internal/v1/controllers'), controllers)
    assert.equal(handlerOf('GET', '/healthz'), 'unmatched', '/healthz is answered before routing')
  })

  it("names a KafkaSource's offsets by namespace and name", () => {
    assert.equal(handlerOf('POST', '/shoal/v1/namespaces/team-a/kafkasources/orders/offsets'), sourceOffsets)
    assert.deepEqual(paramsOf('GET', '/shoal/v1/namespaces/team-a/kafkasources/orders/offsets'), {
      namespace: 'team-a',
      name: 'orders'
    })
    assert.equal(handlerOf('PUT', '/shoal/v1/namespaces/team-a/kafkasources/orders/offsets'), 'unmatched')
    assert.equal(handlerOf('GET', '/shoal/v1/namespaces/%zz/kafkasources/orders/offsets'), 'malformed')
  })

  it('sends every resource path, on any method, to the resources, /api/v1 as the core group', () => {
    const ks = '/apis/sources.knative.dev/v1beta1'
    assert.deepEqual(paramsOf('PATCH', `${ks}/kafkasources`), {
      group: 'sources.knative.dev',
      version: 'v1beta1',
      plural: 'kafkasources'
    })
    assert.deepEqual(paramsOf('GET', `${ks}/namespaces/default/kafkasources/a`), {
      group: 'sources.knative.dev',
      version: 'v1beta1',
      namespace: 'default',
      plural: 'kafkasources',
      name: 'a'
    })
    // Five segments with `namespaces` fourth are a plural and a name, as Kubernetes reads them.
    assert.deepEqual(paramsOf('GET', `${ks}/namespaces/default`), {
      group: 'sources.knative.dev',
      version: 'v1beta1',
      plural: 'namespaces',
      name: 'default'
    })
    assert.deepEqual(paramsOf('DELETE', '/api/v1/namespaces/default/secrets/s'), {
      version: 'v1',
      namespace: 'default',
      plural: 'secrets',
      name: 's'
    })
    for (const path of [`${ks}/kafkasources`, '/api/v1/secrets', `${ks}/namespaces/n/kafkasources/a`])
      assert.equal(handlerOf('GET', path), resources, path)
    for (const path of ['/', '/api', '/api/v1', '/apis/g', '/apis/g/v', `${ks}/x/y/z`, `${ks}/namespaces/n/p/a/b`])
      assert.equal(handlerOf('GET', path), 'unmatched', path)
  })
})
