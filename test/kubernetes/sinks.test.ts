import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { secretNamesOf, shoalSecret } from '../../src/kubernetes/secrets.ts'
import { resolveSinks } from '../../src/kubernetes/sinks.ts'
import type { AddressLookup } from '../../src/kubernetes/sinks.ts'

const notFound = Object.assign(new Error('not found'), { code: 404 })

function lookupOf(addresses: Record<string, string | undefined>): AddressLookup {
  return async ref => {
    const key = `${ref.kind}/${ref.namespace}/${ref.name}`
    if (!(key in addresses)) throw notFound
    const url = addresses[key]
    return url === undefined ? undefined : { url }
  }
}

describe('sink refs resolved through the Kubernetes API', () => {
  const broker = { apiVersion: 'eventing.knative.dev/v1', kind: 'Broker', name: 'default' }
  const lookup = lookupOf({
    'Broker/team-a/default': 'http://broker-ingress.knative-eventing.svc.cluster.local/team-a/default',
    'Broker/team-a/new': undefined
  })

  it("turn an Addressable's ref into its URL, a relative uri resolved against it", async () => {
    const resolved = await resolveSinks(
      { topics: ['t'], sink: { ref: broker, uri: 'extra' }, delivery: { deadLetterSink: { ref: broker }, retry: 2 } },
      'team-a',
      lookup
    )
    assert.deepEqual(resolved, {
      kind: 'resolved',
      spec: {
        topics: ['t'],
        sink: { uri: 'http://broker-ingress.knative-eventing.svc.cluster.local/team-a/extra' },
        delivery: {
          deadLetterSink: { uri: 'http://broker-ingress.knative-eventing.svc.cluster.local/team-a/default' },
          retry: 2
        }
      }
    })
  })

  it('leave Service refs and plain URIs to Shoal', async () => {
    const spec = {
      sink: { ref: { apiVersion: 'v1', kind: 'Service', name: 'display' } },
      delivery: { deadLetterSink: { uri: 'http://dead/' } }
    }
    assert.deepEqual(await resolveSinks(spec, 'team-a', lookupOf({})), { kind: 'resolved', spec })
  })

  it('say which ref is missing, or has no address yet', async () => {
    assert.deepEqual(await resolveSinks({ sink: { ref: { ...broker, name: 'gone' } } }, 'team-a', lookup), {
      kind: 'unresolved',
      reason: 'NotFound',
      message: 'spec.sink.ref: Broker team-a/gone (eventing.knative.dev/v1) not found'
    })
    const pending = await resolveSinks(
      { delivery: { deadLetterSink: { ref: { ...broker, name: 'new' } } } },
      'team-a',
      lookup
    )
    assert.equal(pending.kind === 'unresolved' && pending.reason, 'AddressNotSet')
  })
})

describe("the Secrets a source's spec.net refers to", () => {
  it('are every secretKeyRef name under net, once each, and a Kubernetes Secret becomes a Shoal one by its data', () => {
    const net = {
      sasl: {
        enable: true,
        user: { secretKeyRef: { name: 'creds', key: 'user' } },
        password: { secretKeyRef: { name: 'creds', key: 'password' } }
      },
      tls: { caCert: { secretKeyRef: { name: 'ca', key: 'ca.crt' } } }
    }
    assert.deepEqual(secretNamesOf({ net, sink: { secretKeyRef: { name: 'not-net' } } }), ['ca', 'creds'])
    assert.deepEqual(secretNamesOf({}), [])
    assert.deepEqual(
      shoalSecret(
        { metadata: { name: 'creds', resourceVersion: '9' }, type: 'Opaque', data: { user: 'dQ==' } },
        'team-a',
        'creds'
      ),
      {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'creds', namespace: 'team-a' },
        type: 'Opaque',
        data: { user: 'dQ==' }
      }
    )
  })
})
