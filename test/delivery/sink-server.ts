// A real HTTP(S) sink on 127.0.0.1 port 0 for delivery tests: it records every request (headers, exact body
// bytes, which connection carried it) and answers as the test scripts it, including holding requests open.
import { once } from 'node:events'
import { createServer as createHttpServer } from 'node:http'
import type { IncomingHttpHeaders, IncomingMessage, Server, ServerResponse } from 'node:http'
import { createServer as createHttpsServer } from 'node:https'
import type { AddressInfo, Socket } from 'node:net'

export interface Received {
  readonly headers: IncomingHttpHeaders
  readonly url: string
  readonly body: Buffer
  /** Which connection carried the request (1 for the first the sink accepted). */
  readonly connection: number
}

export interface Answer {
  readonly status: number
  readonly headers?: Record<string, string>
  readonly body?: string | Buffer
}

/** How the sink answers the n-th request (0-based): at once, or when the returned promise settles. */
export type Script = (request: Received, n: number) => Answer | Promise<Answer>

export interface TestSink {
  readonly url: string
  readonly received: Received[]
  /** Connections open now, and the most that were ever open at once. */
  readonly connections: { open: number; most: number; total: number }
  /** Requests being handled (answer not sent yet). */
  readonly pending: () => number
  close(): Promise<void>
}

export async function startSink(script: Script, tls?: { key: string; cert: string }): Promise<TestSink> {
  const received: Received[] = []
  const connections = { open: 0, most: 0, total: 0 }
  const ids = new WeakMap<Socket, number>()
  const sockets = new Set<Socket>()
  let pending = 0
  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      const request: Received = {
        headers: req.headers,
        url: req.url ?? '',
        body: Buffer.concat(chunks),
        connection: ids.get(req.socket) ?? 0
      }
      const n = received.length
      received.push(request)
      pending++
      void Promise.resolve(script(request, n)).then(answer => {
        pending--
        if (res.destroyed) return
        res.writeHead(answer.status, answer.headers)
        res.end(answer.body)
      })
    })
  }
  const server: Server = tls === undefined ? createHttpServer(handler) : createHttpsServer(tls, handler)
  server.on(tls === undefined ? 'connection' : 'secureConnection', (socket: Socket) => {
    connections.total++
    connections.open++
    connections.most = Math.max(connections.most, connections.open)
    ids.set(socket, connections.total)
    sockets.add(socket)
    socket.on('close', () => {
      connections.open--
      sockets.delete(socket)
    })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo
  return {
    url: `${tls === undefined ? 'http' : 'https'}://127.0.0.1:${port}/events?x=1`,
    received,
    connections,
    pending: () => pending,
    async close() {
      for (const socket of sockets) socket.destroy()
      server.close()
      await once(server, 'close')
    }
  }
}

/** A URL on loopback where nothing listens (a port that was just freed). */
export async function unreachableUrl(): Promise<string> {
  const server = createHttpServer()
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo
  server.close()
  await once(server, 'close')
  return `http://127.0.0.1:${port}/`
}

/** A promise with its resolve function, to hold a sink's answers until the test lets them go. */
export function gate(): { readonly promise: Promise<void>; readonly open: () => void } {
  let open = (): void => {}
  const promise = new Promise<void>(resolve => {
    open = resolve
  })
  return { promise, open }
}
