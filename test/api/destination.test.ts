import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { DEFAULT_SERVICE_URL_TEMPLATE, checkServiceUrlTemplate, resolveDestination } from '../../src/api/index.ts'

const options = { serviceUrlTemplate: DEFAULT_SERVICE_URL_TEMPLATE }
const service = { apiVersion: 'v1', kind: 'Service', name: 'display' }

describe('resolveDestination', () => {
  it('resolves a Service ref by the cluster DNS template, in the default namespace', () => {
    assert.equal(DEFAULT_SERVICE_URL_TEMPLATE, 'http://{name}.{namespace}.svc.cluster.local')
    assert.deepEqual(resolveDestination({ ref: service }, 'team-a', options), {
      kind: 'resolved',
      uri: 'http://display.team-a.svc.cluster.local'
    })
  })

  it('uses the ref namespace when it has one, and a Knative Service the same way', () => {
    const ref = { apiVersion: 'serving.knative.dev/v1', kind: 'Service', name: 'display', namespace: 'b' }
    assert.deepEqual(resolveDestination({ ref }, 'a', options), {
      kind: 'resolved',
      uri: 'http://display.b.svc.cluster.local'
    })
  })

  it('appends a relative uri to the ref, as Knative does', () => {
    for (const [uri, expected] of [
      ['/events', 'http://display.ns.svc.cluster.local/events'],
      ['events?x=1', 'http://display.ns.svc.cluster.local/events?x=1'],
      ['?x=1', 'http://display.ns.svc.cluster.local/?x=1']
    ] as const) {
      assert.deepEqual(resolveDestination({ ref: service, uri }, 'ns', options), { kind: 'resolved', uri: expected })
    }
  })

  it('fills any template, for Shoal outside Kubernetes', () => {
    const local = { serviceUrlTemplate: 'http://127.0.0.1:8080/{namespace}/{name}/' }
    assert.deepEqual(resolveDestination({ ref: service, uri: 'in' }, 'ns', local), {
      kind: 'resolved',
      uri: 'http://127.0.0.1:8080/ns/display/in'
    })
  })

  it('returns an absolute uri as it is', () => {
    assert.deepEqual(resolveDestination({ uri: 'https://sink.example.com/a?b=c' }, 'ns', options), {
      kind: 'resolved',
      uri: 'https://sink.example.com/a?b=c'
    })
  })

  it('says why it cannot resolve', () => {
    const cases = [
      [{}, 'SinkMissing'],
      [{ uri: '/relative' }, 'InvalidURI'],
      [{ ref: { apiVersion: 'eventing.knative.dev/v1', kind: 'Broker', name: 'default' } }, 'UnsupportedRef']
    ] as const
    for (const [dest, reason] of cases) {
      const result = resolveDestination(dest, 'ns', options)
      assert.equal(result.kind, 'unresolved')
      assert.ok(result.kind === 'unresolved' && result.reason === reason && result.message.length > 0)
    }
    const bad = resolveDestination({ ref: service }, 'ns', { serviceUrlTemplate: '{name}.{namespace}' })
    assert.ok(bad.kind === 'unresolved' && bad.reason === 'InvalidServiceUrlTemplate')
  })
})

describe('checkServiceUrlTemplate', () => {
  it('accepts http(s) templates with {name}, refuses others', () => {
    assert.equal(checkServiceUrlTemplate(DEFAULT_SERVICE_URL_TEMPLATE), undefined)
    assert.equal(checkServiceUrlTemplate('https://{namespace}-{name}.example.com'), undefined)
    assert.match(checkServiceUrlTemplate('http://fixed.example.com') ?? '', /\{name\}/)
    assert.match(checkServiceUrlTemplate('{name}:8080') ?? '', /scheme|absolute/)
  })
})
