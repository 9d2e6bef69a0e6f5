// The failure drills' proxy (kafka-proxy.ts) without Kafka: it must read the client id of a real client's first
// request, forward the connections of everyone but the process a cut names, hold that process's connections
// (open and new) and close them on restore. Runs in `npm test` (no broker needed, well under a second).
import assert from 'node:assert/strict'
import { once } from 'node:events'
import { createConnection, createServer } from 'node:net'
import type { Server, Socket } from 'node:net'
import { after, describe, it } from 'node:test'
import { Admin } from '@platformatic/kafka'
import { eventually } from '../helpers/wait.ts'
import { KafkaProxy, clientMatches, requestClientId } from './kafka-proxy.ts'

/** A Kafka request header as clients write it: size, api key, api version, correlation id, client id. */
function frame(clientId: string, payload = 'x'): Buffer {
  const id = Buffer.from(clientId)
  const body = Buffer.alloc(10 + id.length + payload.length)
  body.writeInt16BE(3, 0)
  body.writeInt16BE(12, 2)
  body.writeInt32BE(1, 4)
  body.writeInt16BE(id.length, 8)
  id.copy(body, 10)
  body.write(payload, 10 + id.length)
  const size = Buffer.alloc(4)
  size.writeInt32BE(body.length)
  return Buffer.concat([size, body])
}

async function listen(server: Server): Promise<number> {
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return (server.address() as { port: number }).port
}

describe('the drills’ Kafka proxy', () => {
  it('reads the client id of a real client’s first request', async () => {
    const sockets: Socket[] = []
    const server = createServer(socket => sockets.push(socket))
    const first = new Promise<Buffer>(resolve => server.once('connection', (s: Socket) => s.once('data', resolve)))
    const port = await listen(server)
    const admin = new Admin({
      clientId: 'shoal-dispatcher-7-members',
      bootstrapBrokers: [`127.0.0.1:${port}`],
      retries: 0
    })
    const asked = admin.metadata({ topics: [] }).catch(() => undefined)
    const bytes = await first
    assert.equal(requestClientId(bytes), 'shoal-dispatcher-7-members')
    assert.equal(requestClientId(bytes.subarray(0, 13)), undefined, 'not enough bytes yet')
    for (const socket of sockets) socket.destroy()
    server.close()
    await admin.close().catch(() => undefined)
    await asked
  })

  it('matches a process’s client ids by prefix', () => {
    assert.ok(clientMatches('shoal-dispatcher-1', 'shoal-dispatcher-1'))
    assert.ok(clientMatches('shoal-dispatcher-1-members', 'shoal-dispatcher-1'))
    assert.ok(!clientMatches('shoal-dispatcher-10', 'shoal-dispatcher-1'))
    assert.ok(!clientMatches('shoal-dispatcher-0-members', 'shoal-dispatcher-1'))
  })

  describe('cuts one process and restores it', () => {
    const upstreamSockets = new Set<Socket>()
    const upstream = createServer(socket => {
      upstreamSockets.add(socket)
      socket.on('close', () => upstreamSockets.delete(socket))
      socket.pipe(socket)
    })
    const proxy = new KafkaProxy()
    after(async () => {
      await proxy.close()
      for (const s of upstreamSockets) s.destroy()
      upstream.close()
    })

    /** Connects through the proxy as `clientId` and waits for the echo of its first request. */
    async function connect(port: number, clientId: string): Promise<{ socket: Socket; received: Buffer[] }> {
      const socket = createConnection({ host: '127.0.0.1', port })
      const received: Buffer[] = []
      socket.on('data', chunk => received.push(chunk))
      socket.on('error', () => {})
      await once(socket, 'connect')
      socket.write(frame(clientId))
      return { socket, received }
    }

    it('forwards, holds the cut process’s connections, closes them on restore', async () => {
      const upstreamPort = await listen(upstream)
      const [port] = await proxy.listen(1)
      proxy.target(port!, upstreamPort)

      const victim = await connect(port!, 'shoal-dispatcher-7-members')
      const other = await connect(port!, 'shoal-dispatcher-0-members')
      await eventually(
        async () => (victim.received.length > 0 && other.received.length > 0 ? true : undefined),
        30_000,
        'both echoes'
      )
      assert.deepEqual(proxy.stats().open, { 'shoal-dispatcher-7-members': 1, 'shoal-dispatcher-0-members': 1 })

      proxy.cut('shoal-dispatcher-7')
      assert.equal(proxy.stats().held, 1)
      // The victim's upstream connection is gone; the other's still echoes.
      await eventually(async () => (upstreamSockets.size === 1 ? true : undefined), 30_000, 'one upstream left')
      const before = other.received.length
      other.socket.write(frame('shoal-dispatcher-0-members', 'again'))
      await eventually(async () => (other.received.length > before ? true : undefined), 30_000, 'the other’s echo')
      // A new connection of the victim is accepted and held, not forwarded.
      const late = await connect(port!, 'shoal-dispatcher-7-heartbeat')
      await eventually(async () => (proxy.stats().held === 2 ? true : undefined), 30_000, 'the new connection held')
      assert.equal(upstreamSockets.size, 1)

      const closed = Promise.all([once(victim.socket, 'close'), once(late.socket, 'close')])
      proxy.restore()
      await closed
      const back = await connect(port!, 'shoal-dispatcher-7-members')
      await eventually(async () => (back.received.length > 0 ? true : undefined), 30_000, 'forwarded again')
      assert.equal(proxy.stats().everHeld, 2)
      back.socket.destroy()
      other.socket.destroy()
    })
  })
})
