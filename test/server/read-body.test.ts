import assert from 'node:assert/strict'
import { once } from 'node:events'
import { Agent, createServer, request } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { ShoalError } from '../../src/errors/index.ts'
import { readBody } from '../../src/server/read-body.ts'

const LIMIT = 1024

// A real server whose handler reads with readBody: 200 and the body's length, or the error's status.
const server = createServer((req, res) => {
  readBody(req, LIMIT).then(
    body => res.writeHead(200).end(String(body.length)),
    (error: unknown) => res.writeHead(error instanceof ShoalError && /larger/.test(error.message) ? 413 : 400).end()
  )
})
let port = 0
const agent = new Agent({ keepAlive: true, maxSockets: 1 })

/** Sends `chunks` as a chunked body (no Content-Length) on the shared keep-alive connection. */
function post(chunks: readonly Buffer[]): Promise<{ status: number; reused: boolean }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method: 'POST', path: '/', agent }, res => {
      res.resume()
      res.on('end', () => resolve({ status: res.statusCode ?? 0, reused: req.reusedSocket }))
    })
    req.on('error', reject)
    const write = (i: number) => {
      if (i === chunks.length) return void req.end()
      req.write(chunks[i], () => setImmediate(() => write(i + 1)))
    }
    write(0)
  })
}

describe('readBody', () => {
  before(async () => {
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    port = (server.address() as AddressInfo).port
  })
  after(() => {
    agent.destroy()
    server.close()
  })

  it('takes a body up to the limit', async () => {
    assert.deepEqual(await post([Buffer.alloc(LIMIT, 'a')]), { status: 200, reused: false })
  })

  it('refuses a chunked body past the limit with 413, reading the rest so the client can finish sending', async () => {
    // post() fails on any error of the request (EPIPE, a reset) and resolves only with an answer.
    const big = Array.from({ length: 64 }, () => Buffer.alloc(1024, 'b'))
    assert.equal((await post(big)).status, 413)
    assert.equal((await post([Buffer.from('small')])).status, 200)
  })
})
