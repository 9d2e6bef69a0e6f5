import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { describe, it } from 'node:test'
import { validateObject } from '../../src/api/index.ts'
import { authorize, classifyRequest } from '../../src/auth/index.ts'
import type { Principal } from '../../src/auth/index.ts'
import type { KafkaNetSpec, SecretResource } from '../../src/api/index.ts'
import { isShoalError } from '../../src/errors/index.ts'
import {
  checkSealedSecret,
  loadSecretKey,
  openSecret,
  parseSecretKey,
  presentSecret,
  resolveNet,
  sealSecret
} from '../../src/secrets/index.ts'
import type { SecretValues } from '../../src/secrets/index.ts'
import type { StoredEntry, StoredSecret } from '../../src/store/index.ts'

const PASSWORD = 'pw-' + randomBytes(6).toString('hex')
const key = parseSecretKey(randomBytes(32).toString('base64'), 'test')

function secret(name = 'creds', namespace = 'team-a'): SecretResource {
  return validateObject({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace },
    data: { user: Buffer.from('alice').toString('base64') },
    stringData: { password: PASSWORD }
  }) as SecretResource
}

function stored(object: ReturnType<typeof sealSecret>): StoredSecret {
  return { ...object, metadata: { ...object.metadata, uid: 'u', generation: 1, creationTimestamp: 'now' } }
}

describe('Secret kind', () => {
  it('merges stringData into data as base64, and defaults the type', () => {
    const s = secret()
    assert.equal(s.type, 'Opaque')
    assert.deepEqual(Object.keys(s.data), ['password', 'user'])
    assert.equal(Buffer.from(s.data['password']!, 'base64').toString(), PASSWORD)
  })

  it('refuses bad base64, bad keys and the read-only keys field, naming fields and never values', () => {
    try {
      validateObject({
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'x' },
        data: { ok: 'not base64!' },
        stringData: { 'bad/key': PASSWORD },
        keys: ['ok']
      })
      assert.fail('accepted')
    } catch (error) {
      assert.ok(isShoalError(error))
      const paths = error.fields.map(f => f.path).sort()
      assert.deepEqual(paths, ['data.ok', 'keys', 'stringData.bad/key'])
      assert.ok(!JSON.stringify(error.fields).includes(PASSWORD))
      assert.ok(!error.message.includes(PASSWORD))
    }
  })
})

describe('sealing', () => {
  it('stores no value in clear, and opens with the key for the same namespace and name only', () => {
    const sealed = sealSecret(secret(), key)
    const text = JSON.stringify(sealed)
    assert.ok(!text.includes(PASSWORD))
    assert.ok(!text.includes(Buffer.from(PASSWORD).toString('base64')))
    assert.deepEqual(sealed.spec.keys, ['password', 'user'])
    const opened = openSecret(stored(sealed), key)
    assert.equal(opened.kind, 'opened')
    assert.equal(opened.kind === 'opened' && opened.values.get('password')?.toString(), PASSWORD)

    // The same ciphertext under another namespace does not open: it cannot be copied to another tenant.
    const moved = stored({ ...sealed, metadata: { ...sealed.metadata, namespace: 'team-b' } })
    const refused = openSecret(moved, key)
    assert.equal(refused.kind, 'failed')

    const other = parseSecretKey(randomBytes(32).toString('hex'), 'test')
    const wrongKey = openSecret(stored(sealed), other)
    assert.equal(wrongKey.kind, 'failed')
    assert.match(wrongKey.kind === 'failed' ? wrongKey.reason : '', /sealed with secret key/)
    assert.equal(openSecret(stored(sealed), undefined).kind, 'failed')
  })

  it('accepts a forwarded sealed Secret and refuses one in clear', () => {
    const sealed = sealSecret(secret(), key)
    assert.deepEqual(checkSealedSecret(JSON.parse(JSON.stringify(sealed))), sealed)
    assert.throws(() => checkSealedSecret(secret()), /must be sealed/)
  })

  it('presents key names only', () => {
    const sealed = stored(sealSecret(secret(), key))
    const entry: StoredEntry<StoredSecret> = {
      key: 'Secret/team-a/creds',
      bucket: 0,
      resourceVersion: '7',
      object: sealed,
      status: {}
    }
    const shown = presentSecret(entry) as Record<string, unknown>
    assert.deepEqual(shown['keys'], ['password', 'user'])
    assert.equal(shown['data'], undefined)
    assert.ok(!JSON.stringify(shown).includes(sealed.spec.sealed.data))
  })

  it('loads the key from SHOAL_SECRET_KEY, and refuses a malformed one without echoing it', () => {
    assert.equal(loadSecretKey(undefined, {}), undefined)
    const text = randomBytes(32).toString('base64')
    assert.equal(loadSecretKey(undefined, { SHOAL_SECRET_KEY: text })?.bytes.toString('base64'), text)
    assert.throws(
      () => loadSecretKey(undefined, { SHOAL_SECRET_KEY: 'short-and-secret' }),
      (error: Error) => /SHOAL_SECRET_KEY: not a secret key/.test(error.message) && !error.message.includes('short-and')
    )
    assert.throws(() => loadSecretKey('/nonexistent/key', {}), /--secret-key-file \/nonexistent\/key: cannot read/)
  })
})

describe('resolveNet', () => {
  const values = (entries: Record<string, string>): SecretValues => ({
    kind: 'opened',
    values: new Map(Object.entries(entries).map(([k, v]) => [k, Buffer.from(v)]))
  })
  const lookup = (name: string) =>
    name === 'creds' ? values({ user: 'alice', password: PASSWORD, mechanism: 'SCRAM-SHA-512', ca: 'PEM' }) : undefined
  const ref = (name: string, key: string, optional?: boolean) => ({
    secretKeyRef: { name, key, ...(optional === undefined ? {} : { optional }) }
  })

  it('gives SASL and TLS settings from the referenced keys', () => {
    const net: KafkaNetSpec = {
      sasl: {
        enable: true,
        user: ref('creds', 'user'),
        password: ref('creds', 'password'),
        type: ref('creds', 'mechanism')
      },
      tls: { enable: true, caCert: ref('creds', 'ca') }
    }
    assert.deepEqual(resolveNet(net, lookup), {
      kind: 'resolved',
      security: { sasl: { mechanism: 'SCRAM-SHA-512', username: 'alice', password: PASSWORD }, tls: { ca: 'PEM' } }
    })
  })

  it('uses nothing that is not enabled, and PLAIN when no type is given', () => {
    assert.deepEqual(resolveNet({ sasl: { user: ref('nope', 'x') }, tls: { caCert: ref('nope', 'y') } }, lookup), {
      kind: 'resolved'
    })
    const plain = resolveNet(
      { sasl: { enable: true, user: ref('creds', 'user'), password: ref('creds', 'password') } },
      lookup
    )
    assert.equal(plain.kind === 'resolved' && plain.security?.sasl?.mechanism, 'PLAIN')
  })

  it('names the field of a missing Secret or key, and never a value', () => {
    const missing = resolveNet(
      { sasl: { enable: true, user: ref('nope', 'user'), password: ref('creds', 'password') } },
      lookup
    )
    assert.deepEqual(missing, {
      kind: 'unresolved',
      field: 'spec.net.sasl.user.secretKeyRef',
      reason: `secret "nope" not found in the source's namespace`
    })
    const noKey = resolveNet({ tls: { enable: true, caCert: ref('creds', 'other') } }, lookup)
    assert.deepEqual(noKey, {
      kind: 'unresolved',
      field: 'spec.net.tls.caCert.secretKeyRef',
      reason: 'secret "creds" has no key "other"'
    })
    assert.deepEqual(resolveNet({ tls: { enable: true, caCert: ref('nope', 'x', true) } }, lookup), {
      kind: 'resolved',
      security: { tls: {} }
    })
    const badType = resolveNet(
      {
        sasl: {
          enable: true,
          user: ref('creds', 'user'),
          password: ref('creds', 'password'),
          type: ref('creds', 'password')
        }
      },
      lookup
    )
    assert.equal(badType.kind, 'unresolved')
    assert.ok(!JSON.stringify(badType).includes(PASSWORD))
  })
})

describe('Secrets and tenants', () => {
  const tenant: Principal = {
    kind: 'tenant',
    name: 'team-a',
    namespaces: new Set(['team-a']),
    rateLimit: { requestsPerSecond: 1, burst: 1 }
  }
  const decide = (method: string, path: string) => authorize(tenant, classifyRequest(path, method)).kind

  it('lets a tenant use its own namespace’s Secrets and no other’s, on every verb', () => {
    for (const method of ['GET', 'PUT', 'DELETE']) {
      assert.equal(decide(method, '/api/v1/namespaces/team-a/secrets/creds'), 'allow', method)
      assert.equal(decide(method, '/api/v1/namespaces/team-b/secrets/creds'), 'deny', method)
    }
    assert.equal(decide('POST', '/api/v1/namespaces/team-a/secrets'), 'allow')
    assert.equal(decide('POST', '/api/v1/namespaces/team-b/secrets'), 'deny')
    assert.equal(decide('GET', '/api/v1/namespaces/team-b/secrets'), 'deny')
    // A list across namespaces is allowed, filtered to the tenant's own namespaces.
    const all = authorize(tenant, classifyRequest('/api/v1/secrets', 'GET'))
    assert.equal(all.kind === 'allow' && all.visible?.('team-b'), false)
    assert.equal(all.kind === 'allow' && all.visible?.('team-a'), true)
  })
})
