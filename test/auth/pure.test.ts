import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { validateResource } from '../../src/api/index.ts'
import {
  ApiGuard,
  RateLimiter,
  authorize,
  classifyRequest,
  parseTokens,
  tenantRuleErrors,
  tokenDigest
} from '../../src/auth/index.ts'
import type { Principal } from '../../src/auth/index.ts'
import { SinkPolicy } from '../../src/delivery/index.ts'
import { ErrorCodes, isShoalError } from '../../src/errors/index.ts'

const internalToken = 'internal-0123456789abcdef'
const file = {
  internalToken,
  tokens: [
    { name: 'ops', token: 'admin-token-0123456789', admin: true },
    { name: 'team-a', token: 'team-a-token-0123456789', namespaces: ['team-a', 'team-a-dev'] },
    {
      name: 'team-b',
      sha256: tokenDigest('team-b-token-0123456789'),
      namespaces: ['team-b'],
      rateLimit: { requestsPerSecond: 2, burst: 3 }
    }
  ]
}

describe('tokens file', () => {
  it('holds tokens by digest, with their scope and limits', () => {
    const registry = parseTokens(file)
    const teamA = registry.byDigest.get(tokenDigest('team-a-token-0123456789'))
    assert.equal(teamA?.kind, 'tenant')
    assert.deepEqual(teamA?.kind === 'tenant' && [...teamA.namespaces], ['team-a', 'team-a-dev'])
    assert.deepEqual(teamA?.kind === 'tenant' && teamA.rateLimit, { requestsPerSecond: 50, burst: 100 })
    const teamB = registry.byDigest.get(tokenDigest('team-b-token-0123456789'))
    assert.deepEqual(teamB?.kind === 'tenant' && teamB.rateLimit, { requestsPerSecond: 2, burst: 3 })
    assert.equal(registry.byDigest.get(tokenDigest('admin-token-0123456789'))?.kind, 'admin')
  })

  it('names every bad field in one SHOAL_CONFIG', () => {
    const bad = {
      internalToken: 'short',
      extra: 1,
      tokens: [
        { name: 'a', token: 'x', namespaces: ['team-a'] },
        { name: 'a', token: 'team-a-token-0123456789', sha256: 'ab', namespaces: [] },
        { name: 'c', token: 'c-token-0123456789abc', admin: true, namespaces: ['x'] },
        { name: 'd', token: 'd-token-0123456789abc', namespaces: ['Not_A_Namespace'] }
      ]
    }
    try {
      parseTokens(bad)
      assert.fail('accepted')
    } catch (error) {
      assert.ok(isShoalError(error, ErrorCodes.CONFIG))
      const paths = error.fields.map(f => f.path)
      for (const path of [
        'extra',
        'internalToken',
        'tokens[0].token',
        'tokens[1].token',
        'tokens[2].namespaces',
        'tokens[3].namespaces[0]'
      ]) {
        assert.ok(paths.includes(path), `${path} in ${paths.join(', ')}`)
      }
    }
  })

  it('refuses a token given twice, and an internal token that is also a user token', () => {
    assert.throws(
      () => parseTokens({ ...file, internalToken: 'team-a-token-0123456789' }),
      /internalToken: must differ from every token/
    )
    assert.throws(
      () =>
        parseTokens({
          internalToken,
          tokens: [
            { name: 'x', token: 'same-token-0123456789', admin: true },
            { name: 'y', token: 'same-token-0123456789', namespaces: ['y'] }
          ]
        }),
      /the same token is given twice/
    )
  })
})

describe('authorize', () => {
  const tenant: Principal = {
    kind: 'tenant',
    name: 'team-a',
    namespaces: new Set(['team-a']),
    rateLimit: { requestsPerSecond: 1, burst: 1 }
  }
  const admin: Principal = { kind: 'admin', name: 'ops' }
  const ks = (ns: string, rest = '') => `/apis/sources.knative.dev/v1beta1/namespaces/${ns}/kafkasources${rest}`

  it('lets a tenant do every verb in its namespaces, and refuses every verb in another with 403', () => {
    for (const [method, path] of [
      ['GET', ks('team-a')],
      ['GET', ks('team-a', '/x')],
      ['POST', ks('team-a')],
      ['PUT', ks('team-a', '/x')],
      ['DELETE', ks('team-a', '/x')]
    ] as const) {
      assert.equal(authorize(tenant, classifyRequest(path, method)).kind, 'allow', `${method} ${path}`)
      const other = authorize(tenant, classifyRequest(path.replace('team-a', 'team-b'), method))
      assert.equal(other.kind === 'deny' && other.code, 403, `${method} in team-b`)
    }
  })

  it('filters a list across namespaces to the tenant namespaces', () => {
    const decision = authorize(tenant, classifyRequest('/apis/sources.knative.dev/v1/pingsources', 'GET'))
    assert.equal(decision.kind, 'allow')
    assert.ok(decision.kind === 'allow' && decision.visible?.('team-a') && !decision.visible('team-b'))
  })

  it('keeps Dispatchers and operator endpoints for admins (403) and hides internal ones (404)', () => {
    const dispatchers = authorize(tenant, classifyRequest('/apis/shoal.dev/v1alpha1/dispatchers/dispatcher-0', 'PUT'))
    assert.equal(dispatchers.kind === 'deny' && dispatchers.code, 403)
    const rebalance = authorize(tenant, classifyRequest('/shoal/v1/rebalance', 'POST'))
    assert.equal(rebalance.kind === 'deny' && rebalance.code, 403)
    const internal = authorize(tenant, classifyRequest('/internal/v1/writes', 'POST'))
    assert.equal(internal.kind === 'deny' && internal.code, 404)
    for (const path of [
      '/apis/shoal.dev/v1alpha1/dispatchers',
      '/shoal/v1/rebalance',
      '/internal/v1/writes',
      ks('team-b')
    ]) {
      assert.equal(authorize(admin, classifyRequest(path, 'POST')).kind, 'allow')
    }
    assert.equal(authorize(tenant, classifyRequest('/openapi.json', 'GET')).kind, 'allow')
  })

  it("scopes a source's operations (offsets) by its namespace", () => {
    const path = (ns: string) => `/shoal/v1/namespaces/${ns}/kafkasources/orders/offsets`
    assert.equal(authorize(tenant, classifyRequest(path('team-a'), 'POST')).kind, 'allow')
    const other = authorize(tenant, classifyRequest(path('team-b'), 'GET'))
    assert.equal(other.kind === 'deny' && other.code, 403)
  })

  it('never throws on a path with broken percent-encoding', () => {
    assert.equal(authorize(tenant, classifyRequest(ks('%zz'), 'GET')).kind, 'deny')
  })
})

describe('RateLimiter', () => {
  it('allows the burst, then refuses with a Retry-After until tokens come back', () => {
    let now = 0
    const limiter = new RateLimiter(() => now)
    const limit = { requestsPerSecond: 2, burst: 3 }
    for (let i = 0; i < 3; i++) assert.equal(limiter.take('t', limit).kind, 'allowed')
    assert.deepEqual(limiter.take('t', limit), { kind: 'limited', retryAfterSeconds: 1 })
    assert.equal(limiter.take('other', limit).kind, 'allowed', 'buckets are per token')
    now += 500
    assert.equal(limiter.take('t', limit).kind, 'allowed')
    assert.equal(limiter.take('t', limit).kind, 'limited')
  })
})

describe('tenant rules', () => {
  const context = {
    prefix: 'shoal',
    namespaces: new Set(['team-a']),
    storedGroup: undefined,
    sinkPolicy: new SinkPolicy({ ownEndpoints: () => ['http://127.0.0.1:8080'] }),
    serviceUrlTemplate: 'http://{name}.{namespace}.svc.cluster.local'
  }
  const source = (spec: Record<string, unknown>) =>
    validateResource({
      apiVersion: 'sources.knative.dev/v1beta1',
      kind: 'KafkaSource',
      metadata: { name: 'a', namespace: 'team-a' },
      spec: { bootstrapServers: ['k:9092'], topics: ['orders'], sink: { uri: 'http://sink.example/' }, ...spec }
    })

  it('refuses internal topics, foreign groups, foreign refs and forbidden sinks, naming each field', () => {
    const errors = tenantRuleErrors(
      source({
        topics: ['orders', 'shoal.resources', '__consumer_offsets'],
        consumerGroup: 'team-b.orders',
        sink: { ref: { apiVersion: 'v1', kind: 'Service', name: 'sink', namespace: 'team-b' } },
        delivery: { deadLetterSink: { uri: 'http://169.254.169.254/' } }
      }),
      context
    )
    assert.deepEqual(
      errors.map(e => e.path),
      [
        'spec.topics[1]',
        'spec.topics[2]',
        'spec.consumerGroup',
        'spec.sink.ref.namespace',
        'spec.delivery.deadLetterSink.uri'
      ]
    )
  })

  it("accepts the namespace's groups, the stored group and no group; admins may name any topic or group", () => {
    assert.deepEqual(tenantRuleErrors(source({ consumerGroup: 'team-a.orders' }), context), [])
    assert.deepEqual(tenantRuleErrors(source({}), context), [])
    const stored = 'knative-kafka-source-1234'
    assert.deepEqual(tenantRuleErrors(source({ consumerGroup: stored }), { ...context, storedGroup: stored }), [])
    const admin = { ...context, namespaces: undefined }
    assert.deepEqual(
      tenantRuleErrors(source({ topics: ['shoal.status'], consumerGroup: 'shoal-controllers' }), admin),
      []
    )
    assert.equal(tenantRuleErrors(source({ sink: { uri: 'http://localhost:8080/' } }), admin)[0]?.path, 'spec.sink.uri')
  })
})

describe('ApiGuard', () => {
  const guard = new ApiGuard({
    tokens: parseTokens(file),
    prefix: 'shoal',
    serviceUrlTemplate: 'http://{name}.{namespace}.svc'
  })
  const path = '/apis/sources.knative.dev/v1beta1/namespaces/team-b/kafkasources'

  it('answers 401 without a token or with an unknown one, and knows the internal token', () => {
    for (const header of [undefined, '', 'Bearer nope-nope-nope-nope', 'Basic abc', `Bearer ${internalToken}x`]) {
      const verdict = guard.check(header, path, 'GET')
      assert.equal(verdict.kind === 'deny' && verdict.code, 401, String(header))
      assert.equal(verdict.kind === 'deny' && verdict.headers['www-authenticate'], 'Bearer realm="shoal"')
    }
    const internal = guard.check(`Bearer ${internalToken}`, '/internal/v1/writes', 'POST')
    assert.equal(internal.kind === 'allow' && internal.principal.kind, 'internal')
  })

  it('limits a tenant token with 429 and Retry-After; admin tokens are not limited by default', () => {
    const header = 'Bearer team-b-token-0123456789'
    const verdicts = Array.from({ length: 10 }, () => guard.check(header, path, 'GET'))
    const limited = verdicts.filter(v => v.kind === 'deny' && v.code === 429)
    assert.ok(limited.length >= 6, `${limited.length} of 10 limited`)
    assert.match(limited[0]?.kind === 'deny' ? (limited[0].headers['retry-after'] ?? '') : '', /^\d+$/)
    for (let i = 0; i < 200; i++) assert.equal(guard.check('Bearer admin-token-0123456789', path, 'GET').kind, 'allow')
  })

  it('is open in single-tenant mode', () => {
    const open = new ApiGuard({ prefix: 'shoal', serviceUrlTemplate: 'http://{name}.{namespace}.svc' })
    assert.equal(open.multiTenant, false)
    const verdict = open.check(undefined, '/internal/v1/writes', 'POST')
    assert.equal(verdict.kind === 'allow' && verdict.principal.kind, 'open')
    assert.deepEqual(open.internalHeaders(), {})
  })
})
