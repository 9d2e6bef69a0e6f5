import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import type { IncomingHttpHeaders, Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { ErrorCodes, isShoalError } from '../../src/errors/index.ts'
import { FORWARDED_HEADER, forward } from '../../src/server/forward.ts'

interface Seen {
  readonly method: string | undefined
  readonly url: string | undefined
  readonly headers: IncomingHttpHeaders
  readonly body: string
}

describe('forward', () => {
  const seen: Seen[] = []
  let server: Server
  let url: string
  const peers = { headers: { authorization: 'Bearer internal-token' } }

  before(async () => {
    server = createServer((req, res) => {
      const chunks: Buffer[] = []
      req.on('data', (chunk: Buffer) => chunks.push(chunk))
      req.on('end', () => {
        seen.push({ method: req.method, url: req.url, headers: req.headers, body: Buffer.concat(chunks).toString() })
        if (req.url === '/text') {
          res.writeHead(200, { 'content-type': 'text/plain' }).end('not json')
          return
        }
        res.writeHead(409, { 'content-type': 'application/json' }).end(JSON.stringify({ reason: 'Conflict' }))
      })
    })
    await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  })

  after(async () => {
    await new Promise(resolve => server.close(resolve))
  })

  it('passes the request on marked as forwarded, with the internal token, and gives back the answer as it came', async () => {
    const answer = await forward(peers, {
      to: 'owner',
      url,
      method: 'POST',
      path: '/internal/v1/writes',
      body: '{"op":{}}',
      timeoutMs: 5_000
    })
    assert.deepEqual(answer, { statusCode: 409, body: { reason: 'Conflict' } })
    const request = seen.at(-1)!
    assert.equal(request.method, 'POST')
    assert.equal(request.url, '/internal/v1/writes')
    assert.equal(request.headers[FORWARDED_HEADER], '1')
    assert.equal(request.headers.authorization, 'Bearer internal-token')
    assert.equal(request.headers['content-type'], 'application/json')
    assert.equal(request.body, '{"op":{}}')
  })

  it('sends a GET without a body or a content-type', async () => {
    await forward(peers, { to: 'leader', url, method: 'GET', path: '/shoal/v1/pool', timeoutMs: 5_000 })
    const request = seen.at(-1)!
    assert.equal(request.method, 'GET')
    assert.equal(request.headers['content-type'], undefined)
    assert.equal(request.body, '')
  })

  it('makes a replica that does not answer a retriable UNAVAILABLE naming who was asked', async () => {
    const closed = createServer()
    await new Promise<void>(resolve => closed.listen(0, '127.0.0.1', resolve))
    const gone = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`
    await new Promise(resolve => closed.close(resolve))
    await assert.rejects(
      forward(peers, { to: 'leader', url: gone, method: 'GET', path: '/shoal/v1/pool', timeoutMs: 5_000 }),
      error =>
        isShoalError(error, ErrorCodes.UNAVAILABLE) &&
        error.retriable &&
        error.message.startsWith(`the leader at ${gone} did not answer: `)
    )
  })

  it('does not take an answer that is not JSON for a missing replica', async () => {
    await assert.rejects(
      forward(peers, { to: 'owner', url, method: 'GET', path: '/text', timeoutMs: 5_000 }),
      error => !isShoalError(error)
    )
  })
})
