import assert from 'node:assert/strict'
import { once } from 'node:events'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { StatefulSetScaler } from '../../src/pool/index.ts'

interface Seen {
  method: string
  path: string
  contentType: string
  authorization: string
  body: unknown
}

/**
 * What the Kubernetes API checks of a scale write: PATCH on the scale subresource, a merge-patch content type, a
 * bearer token, and a body that is a Scale patch with a whole spec.replicas. Anything else gets the API's Status
 * answer (415, 401, 404, 422).
 */
async function fakeKubernetesApi(token: string) {
  const seen: Seen[] = []
  let replicas = 1
  const server = createServer((req, res) => {
    let text = ''
    req.setEncoding('utf8')
    req.on('data', chunk => (text += chunk))
    req.on('end', () => {
      const status = (code: number, reason: string, message: string): void => {
        res
          .writeHead(code, { 'content-type': 'application/json' })
          .end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', reason, message, code }))
      }
      let body: unknown
      try {
        body = JSON.parse(text)
      } catch {
        body = text
      }
      seen.push({
        method: req.method!,
        path: req.url!,
        contentType: String(req.headers['content-type']),
        authorization: String(req.headers['authorization']),
        body
      })
      if (req.headers['authorization'] !== `Bearer ${token}`) return status(401, 'Unauthorized', 'Unauthorized')
      const match = /^\/apis\/apps\/v1\/namespaces\/([^/]+)\/statefulsets\/([^/]+)\/scale$/.exec(req.url!)
      if (!match || match[1] !== 'shoal' || match[2] !== 'shoal-dispatcher')
        return status(404, 'NotFound', `no such resource ${req.url}`)
      if (req.method !== 'PATCH') return status(405, 'MethodNotAllowed', `${req.method} is not allowed`)
      if (req.headers['content-type'] !== 'application/merge-patch+json')
        return status(415, 'UnsupportedMediaType', `the body of the request was in an unknown format`)
      const spec = (body as { spec?: { replicas?: unknown } }).spec
      if (!Number.isInteger(spec?.replicas) || (spec!.replicas as number) < 0)
        return status(422, 'Invalid', 'Scale.autoscaling "shoal-dispatcher" is invalid: spec.replicas')
      replicas = spec!.replicas as number
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          kind: 'Scale',
          apiVersion: 'autoscaling/v1',
          metadata: { name: 'shoal-dispatcher', namespace: 'shoal' },
          spec: { replicas },
          status: { replicas: 1, selector: 'app=shoal-dispatcher' }
        })
      )
    })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    replicas: () => replicas,
    close: () => new Promise<void>(resolve => server.close(() => resolve()))
  }
}

describe('StatefulSetScaler', () => {
  it('merge-patches spec.replicas on the scale subresource with the service account token', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'shoal-sa-'))
    const tokenPath = join(dir, 'token')
    await writeFile(tokenPath, 'token-one\n')
    const api = await fakeKubernetesApi('token-one')
    const scaler = new StatefulSetScaler({ namespace: 'shoal', name: 'shoal-dispatcher', apiUrl: api.url, tokenPath })
    try {
      await scaler.apply(4)
      assert.equal(api.replicas(), 4)
      assert.deepEqual(api.seen[0], {
        method: 'PATCH',
        path: '/apis/apps/v1/namespaces/shoal/statefulsets/shoal-dispatcher/scale',
        contentType: 'application/merge-patch+json',
        authorization: 'Bearer token-one',
        body: { spec: { replicas: 4 } }
      })
      // The same decision again is not written again; a new one is.
      await scaler.apply(4)
      assert.equal(api.seen.length, 1)
      await scaler.apply(2)
      assert.equal(api.replicas(), 2)
      assert.equal(api.seen.length, 2)

      // The token is read at every call (projected tokens rotate): a stale one is refused, with the API's reason.
      await writeFile(tokenPath, 'token-two\n')
      await assert.rejects(scaler.apply(3), /refused to scale .* to 3: 401 Unauthorized/)
      assert.equal(api.replicas(), 2)
    } finally {
      await scaler.close()
      await api.close()
      await rm(dir, { recursive: true, force: true })
    }
  })

  it('needs the API address outside a pod', () => {
    assert.throws(
      () => new StatefulSetScaler({ namespace: 'shoal', name: 'd', env: {} }),
      /KUBERNETES_SERVICE_HOST is not set/
    )
    const inPod = new StatefulSetScaler({
      namespace: 'shoal',
      name: 'd',
      env: { KUBERNETES_SERVICE_HOST: '10.96.0.1', KUBERNETES_SERVICE_PORT: '443' }
    })
    assert.equal(inPod.url, 'https://10.96.0.1:443/apis/apps/v1/namespaces/shoal/statefulsets/d/scale')
  })
})
