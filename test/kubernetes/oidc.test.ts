import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import {
  KafkaSourceKind,
  OIDC_ANNOTATION,
  PingSourceKind,
  oidcTokenKey,
  parseOidcAnnotation
} from '../../src/api/index.ts'
import type { KindInfo } from '../../src/api/index.ts'
import { shoalManifest } from '../../src/kubernetes/mirror.ts'
import {
  needsRenewal,
  oidcOf,
  oidcServiceAccountName,
  withOidcAnnotation,
  withOidcStatus
} from '../../src/kubernetes/oidc.ts'
import { OidcTokenKeeper, TOKEN_SECONDS } from '../../src/kubernetes/oidc-tokens.ts'

// OIDC to sinks, the parts decided without the API server (the operator test runs them against a real one).

describe("a source's OIDC ServiceAccount, named as Knative names it", () => {
  const broker = { group: 'eventing.knative.dev', kind: 'Broker' }
  it("matches Knative's own examples (knative.dev/eventing pkg/auth)", () => {
    assert.equal(oidcServiceAccountName({ group: 'group', kind: 'kind' }, 'name'), 'name-oidc-group-kind')
    assert.equal(oidcServiceAccountName(broker, 'my-Broker'), 'my-broker-oidc-eventing.knative.dev-broker')
    assert.equal(
      oidcServiceAccountName(broker, 'my-loooooooooooooooooooooooooooooooooooooog-Broker'),
      'my-looooooooooooooooooooooooooo2dfc2a3825b8d82077b0f25518b36884'
    )
  })

  it('is a DNS label of at most 63 characters for any source name', () => {
    for (const info of [KafkaSourceKind, PingSourceKind]) {
      for (let length = 1; length <= 253; length += 7) {
        const name = oidcServiceAccountName(info, 'a'.repeat(length))
        assert.ok(name.length <= 63, name)
        assert.match(name, /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/)
      }
    }
  })
})

const info: KindInfo = KafkaSourceKind
const source = {
  apiVersion: 'sources.knative.dev/v1beta1',
  kind: 'KafkaSource',
  metadata: { name: 'orders', namespace: 'shop', uid: 'u-1', generation: 1 },
  spec: {
    sink: { uri: 'http://sink.example/', audience: 'aud-sink' },
    delivery: { deadLetterSink: { uri: 'http://dls.example/', audience: 'aud-dls' }, retry: 2 }
  }
}

describe('the manifest Shoal gets for a source that names audiences', () => {
  it("holds the audiences in Shoal's annotation, and no audience field Shoal's API would refuse", () => {
    const oidc = oidcOf(info, 'orders', source.spec)
    const manifest = withOidcAnnotation(shoalManifest(source, info), oidc)
    const spec = manifest.spec as typeof source.spec
    assert.equal('audience' in spec.sink, false)
    assert.equal('audience' in spec.delivery.deadLetterSink, false)
    assert.equal(spec.delivery.retry, 2)
    const parsed = parseOidcAnnotation(manifest.metadata.annotations)
    assert.deepEqual(parsed, {
      kind: 'oidc',
      oidc: {
        serviceAccountName: 'orders-oidc-sources.knative.dev-kafkasource',
        sink: 'aud-sink',
        deadLetterSink: 'aud-dls'
      }
    })
  })

  it('is left as it is when no destination names an audience', () => {
    const plain = { ...source, spec: { sink: { uri: 'http://sink.example/' } } }
    assert.equal(oidcOf(info, 'orders', plain.spec), undefined)
    const manifest = shoalManifest(plain, info)
    assert.equal(withOidcAnnotation(manifest, undefined), manifest)
  })

  it('an annotation Shoal cannot read is refused with the reason', () => {
    for (const [value, reason] of [
      ['{', /must be JSON/],
      ['[]', /JSON object/],
      ['{"serviceAccountName":"Bad_Name","sink":"a"}', /serviceAccountName/],
      ['{"serviceAccountName":"sa"}', /names no audience/],
      ['{"serviceAccountName":"sa","sink":""}', /sink must be a non-empty string/],
      ['{"serviceAccountName":"sa","sink":"a","extra":1}', /unknown field "extra"/]
    ] as const) {
      const parsed = parseOidcAnnotation({ [OIDC_ANNOTATION]: value })
      assert.equal(parsed.kind, 'invalid', value)
      assert.match(parsed.kind === 'invalid' ? parsed.message : '', reason)
    }
  })
})

describe('the status Knative writes for OIDC', () => {
  const oidc = { serviceAccountName: 'sa', sink: 'aud' }
  const ready = { type: 'Ready', status: 'True' as const }
  const now = new Date('2026-12-04T00:00:00Z')

  it('sinkAudience, auth.serviceAccountName and OIDCIdentityCreated, its transition time kept while it holds', () => {
    const first = withOidcStatus({ conditions: [ready] }, {}, oidc, undefined, now)
    assert.equal(first['sinkAudience'], 'aud')
    assert.deepEqual(first['auth'], { serviceAccountName: 'sa' })
    const later = withOidcStatus({ conditions: [ready] }, first, oidc, undefined, new Date(now.getTime() + 60_000))
    assert.deepEqual(later, first)
  })

  it('a failure is OIDCIdentityCreated False and Ready False, with the message', () => {
    const failed = withOidcStatus({ conditions: [ready] }, {}, oidc, 'no', now)
    const conditions = failed['conditions'] as { type: string; status: string; message?: string }[]
    assert.deepEqual(
      conditions.map(c => [c.type, c.status, c.message]),
      [
        ['OIDCIdentityCreated', 'False', 'no'],
        ['Ready', 'False', 'no']
      ]
    )
  })

  it('no audience, no OIDC fields', () => {
    const status = { conditions: [ready] }
    assert.equal(withOidcStatus(status, {}, undefined, undefined, now), status)
  })
})

describe('the tokens the operator keeps', () => {
  function rig() {
    let clock = 1_000_000
    const requests: string[] = []
    const secrets: Record<string, unknown>[] = []
    let accounts = 0
    const keeper = new OidcTokenKeeper(
      {
        serviceAccount: async () =>
          accounts === 0 ? undefined : { metadata: { ownerReferences: [{ uid: 'u-1', controller: true }] } },
        createServiceAccount: async () => {
          accounts += 1
        },
        requestToken: async (_ns, _name, audience, seconds) => {
          requests.push(audience)
          return { token: `${audience}#${requests.length}`, expiresAt: clock + seconds * 1000 }
        }
      },
      {
        putSecret: async secret => {
          secrets.push(secret)
          return { ok: true, object: {} }
        }
      },
      () => clock
    )
    return { keeper, requests, secrets, advance: (ms: number) => (clock += ms), accounts: () => accounts }
  }
  const oidc = oidcOf(info, 'orders', source.spec)!

  it('makes the ServiceAccount once, writes a token per audience, and asks again only after half the lifetime', async () => {
    const r = rig()
    await r.keeper.ensure(info, source, oidc)
    assert.equal(r.accounts(), 1)
    assert.deepEqual(r.requests, ['aud-sink', 'aud-dls'])
    const data = r.secrets[0]!['data'] as Record<string, string>
    assert.equal(Buffer.from(data[oidcTokenKey('aud-sink')]!, 'base64').toString(), 'aud-sink#1')
    assert.equal(Buffer.from(data[oidcTokenKey('aud-dls')]!, 'base64').toString(), 'aud-dls#2')
    r.advance((TOKEN_SECONDS * 1000) / 2 - 1)
    await r.keeper.ensure(info, source, oidc)
    assert.equal(r.secrets.length, 1)
    r.advance(1)
    await r.keeper.ensure(info, source, oidc)
    assert.deepEqual(r.requests, ['aud-sink', 'aud-dls', 'aud-sink', 'aud-dls'])
    assert.equal(r.secrets.length, 2)
    assert.equal(r.accounts(), 1)
  })

  it('a changed audience gets its token and the old one is dropped from the Secret', async () => {
    const r = rig()
    await r.keeper.ensure(info, source, oidc)
    await r.keeper.ensure(info, source, { ...oidc, sink: 'aud-new' })
    const data = r.secrets.at(-1)!['data'] as Record<string, string>
    assert.deepEqual(Object.keys(data).sort(), [oidcTokenKey('aud-new'), oidcTokenKey('aud-dls')].sort())
  })

  it('renewal is due at half the lifetime', () => {
    assert.equal(needsRenewal(undefined, 0), true)
    assert.equal(needsRenewal({ token: 't', issuedAt: 0, expiresAt: 100 }, 49), false)
    assert.equal(needsRenewal({ token: 't', issuedAt: 0, expiresAt: 100 }, 50), true)
  })
})
