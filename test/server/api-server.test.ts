import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import type { IncomingHttpHeaders, Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { ApiServer } from '../../src/server/index.ts'
import type { ServedStore } from '../../src/server/types.ts'
import type { BucketOwner } from '../../src/store/index.ts'

// The API server's own behaviour — its front door and its forwarding to the leader — over a stand-in store, so
// no Kafka is needed. test/server/resource-api.test.ts runs the resource API on real controllers.

function storeOwnedBy(leader: BucketOwner): ServedStore {
  return {
    replicaId: 'replica-a',
    buckets: 16,
    assignment: { generation: 3, buckets: [] },
    isLeader: leader.kind === 'self',
    controllers: () => [],
    ownerOf: () => leader,
    get: async () => undefined,
    list: async () => [],
    writeAtOwner: async () => {
      throw new Error('no writes in these tests')
    }
  }
}

async function call(
  url: string,
  path: string,
  init: { method?: string; headers?: Record<string, string> } = {}
): Promise<{ status: number; headers: Headers; body: { code?: number; reason?: string; message?: string } }> {
  const response = await fetch(`${url}${path}`, init)
  const text = await response.text()
  return { status: response.status, headers: response.headers, body: text.startsWith('{') ? JSON.parse(text) : {} }
}

describe('the API server', () => {
  let api: ApiServer
  let url: string
  let leader: Server
  let leaderUrl: string
  const leaderSaw: Array<{ url: string | undefined; headers: IncomingHttpHeaders }> = []

  before(async () => {
    leader = createServer((req, res) => {
      leaderSaw.push({ url: req.url, headers: req.headers })
      res.writeHead(202, { 'content-type': 'application/json' }).end(JSON.stringify({ from: 'the leader' }))
    })
    await new Promise<void>(resolve => leader.listen(0, '127.0.0.1', resolve))
    leaderUrl = `http://127.0.0.1:${(leader.address() as AddressInfo).port}`
    api = new ApiServer({ port: 0 })
    url = await api.listen()
  })

  after(async () => {
    await api.close()
    await new Promise(resolve => leader.close(resolve))
  })

  it('answers /healthz at once, and every other path 503 with retry-after until a store is attached', async () => {
    assert.equal((await call(url, '/healthz')).status, 200)
    const starting = await call(url, '/readyz')
    assert.equal(starting.status, 503)
    assert.equal(starting.headers.get('retry-after'), '1')
    assert.equal(starting.body.message, 'the controller is starting; retry')
    api.attach(storeOwnedBy({ kind: 'self' }))
    assert.equal((await call(url, '/readyz')).status, 200)
  })

  it('answers a path it does not serve 404, and a path that does not decode 400', async () => {
    api.attach(storeOwnedBy({ kind: 'self' }))
    const unknown = await call(url, '/nowhere')
    assert.equal(unknown.status, 404)
    assert.equal(unknown.body.message, 'the server could not find the requested resource (/nowhere)')
    const wrongMethod = await call(url, '/shoal/v1/pool', { method: 'DELETE' })
    assert.equal(wrongMethod.status, 404)
    const broken = await call(url, '/apis/g/v/p/%zz')
    assert.equal(broken.status, 400)
    assert.equal(broken.body.message, 'the path /apis/g/v/p/%zz is not valid percent-encoding')
  })

  it('refuses an offsets path that does not decode as a 400, like every other path', async () => {
    api.attach(storeOwnedBy({ kind: 'self' }))
    const broken = await call(url, '/shoal/v1/namespaces/%zz/kafkasources/orders/offsets')
    assert.equal(broken.status, 400)
    assert.equal(broken.body.reason, 'BadRequest')
  })

  it('forwards what only the leader knows to the leader, and relays its answer', async () => {
    api.attach(storeOwnedBy({ kind: 'remote', replicaId: 'replica-b', url: leaderUrl }))
    for (const path of ['/shoal/v1/pool', '/shoal/v1/autoscaling', '/shoal/v1/rebalance']) {
      const answer = await call(url, path)
      assert.equal(answer.status, 202, path)
      assert.deepEqual(answer.body, { from: 'the leader' })
      assert.equal(leaderSaw.at(-1)?.url, path)
      assert.equal(leaderSaw.at(-1)?.headers['x-shoal-forwarded'], '1')
    }
  })

  it('does not pass on a request another replica forwarded: without the leader here, 503', async () => {
    api.attach(storeOwnedBy({ kind: 'remote', replicaId: 'replica-b', url: leaderUrl }))
    const answer = await call(url, '/shoal/v1/pool', { headers: { 'x-shoal-forwarded': '1' } })
    assert.equal(answer.status, 503)
    assert.equal(answer.body.message, 'no scheduler leader right now; retry')
  })

  it('answers 503 to retry, not 500, when the leader does not answer a forwarded request', async () => {
    const gone = createServer()
    await new Promise<void>(resolve => gone.listen(0, '127.0.0.1', resolve))
    const goneUrl = `http://127.0.0.1:${(gone.address() as AddressInfo).port}`
    await new Promise(resolve => gone.close(resolve))
    api.attach(storeOwnedBy({ kind: 'remote', replicaId: 'replica-b', url: goneUrl }))
    for (const path of ['/shoal/v1/pool', '/shoal/v1/rebalance']) {
      const answer = await call(url, path)
      assert.equal(answer.status, 503, path)
      assert.equal(answer.headers.get('retry-after'), '1')
      assert.match(answer.body.message ?? '', /^the leader at http:\/\/127\.0\.0\.1:\d+ did not answer: /)
    }
  })
})
