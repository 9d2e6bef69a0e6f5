import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { Deliverer, oidcTokenRef, resolveDeliveryPolicy } from '../../src/delivery/index.ts'
import type { CloudEvent, DeliveryTarget, OidcTokenRef } from '../../src/delivery/index.ts'
import { OIDC_ANNOTATION, oidcTokenKey } from '../../src/api/index.ts'
import { startSink } from './sink-server.ts'
import type { TestSink } from './sink-server.ts'

// A sink's OIDC audience on the wire: the token the lookup gives goes as `Authorization: Bearer`, to the sink and to
// the dead letter sink each with its own audience's; with no token nothing is sent and the attempt fails saying why.

const open: { close(): Promise<void> }[] = []
after(async () => {
  await Promise.all(open.map(o => o.close()))
})

const event: CloudEvent = {
  attributes: { specversion: '1.0', id: 'e-1', source: '/test', type: 'test.oidc' },
  extensions: {},
  data: Buffer.from('{}')
} as unknown as CloudEvent

async function sink(status: number): Promise<TestSink> {
  const s = await startSink(() => ({ status }))
  open.push(s)
  return s
}

const metadata = {
  namespace: 'shop',
  annotations: {
    [OIDC_ANNOTATION]: JSON.stringify({
      serviceAccountName: 'orders-oidc-sources.knative.dev-kafkasource',
      sink: 'aud-sink',
      deadLetterSink: 'aud-dls'
    })
  }
}

describe('OIDC tokens to sinks', () => {
  it('each destination gets the token of its own audience, from the Secret the annotation names', async () => {
    const main = await sink(500)
    const dead = await sink(202)
    const asked: OidcTokenRef[] = []
    const deliverer = new Deliverer({
      oidcTokens: ref => {
        asked.push(ref)
        return { kind: 'token', token: `token-for-${ref.audience}` }
      }
    })
    open.push(deliverer)
    const target: DeliveryTarget = {
      sourceKey: 'KafkaSource/shop/orders',
      sink: { uri: main.url, oidc: oidcTokenRef(metadata, 'sink')! },
      policy: resolveDeliveryPolicy({ retry: 0 }, { uri: dead.url, oidc: oidcTokenRef(metadata, 'deadLetterSink')! })
    }
    const outcome = await deliverer.deliver(event, target)
    assert.equal(outcome.kind, 'dead-lettered')
    assert.equal(main.received[0]?.headers.authorization, 'Bearer token-for-aud-sink')
    assert.equal(dead.received[0]?.headers.authorization, 'Bearer token-for-aud-dls')
    assert.deepEqual(
      asked.map(r => [r.secret, r.key]),
      [
        ['Secret/shop/orders-oidc-sources.knative.dev-kafkasource', oidcTokenKey('aud-sink')],
        ['Secret/shop/orders-oidc-sources.knative.dev-kafkasource', oidcTokenKey('aud-dls')]
      ]
    )
  })

  it('with no token yet, nothing is sent and the failure says why', async () => {
    const s = await sink(202)
    const deliverer = new Deliverer({ oidcTokens: () => ({ kind: 'missing', reason: 'not there yet' }) })
    open.push(deliverer)
    const outcome = await deliverer.deliver(event, {
      sourceKey: 'KafkaSource/shop/orders',
      sink: { uri: s.url, oidc: oidcTokenRef(metadata, 'sink')! },
      policy: resolveDeliveryPolicy({ retry: 1, backoffDelay: 'PT0.01S' })
    })
    assert.equal(outcome.kind, 'dropped')
    assert.equal(s.received.length, 0)
    assert.match(
      outcome.kind === 'dropped' ? outcome.reason : '',
      /no OIDC token for audience "aud-sink": not there yet/
    )
  })

  it('a source without the annotation presents no token', () => {
    assert.equal(oidcTokenRef({ namespace: 'shop' }, 'sink'), undefined)
    assert.equal(oidcTokenRef({ ...metadata, annotations: { x: 'y' } }, 'deadLetterSink'), undefined)
  })
})
