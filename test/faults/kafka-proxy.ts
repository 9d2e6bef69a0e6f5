// A TCP proxy in front of each broker's extra listener, which knows whose connection it carries: it reads the
// client id from the first Kafka request of a connection (request header: size, api key, version, correlation
// id, then the client id as a nullable int16-length string). A drill cuts every connection of one process —
// Shoal names its Kafka clients `shoal-<dispatcher id>[-role]` — while everyone else's traffic flows on.
//
// A cut is a black hole, as a dropped network link is: the process's open connections stop carrying bytes in
// either direction (its requests time out), and its new connections are accepted and then ignored. On restore
// the held connections are closed (they did not survive the outage) and new ones are forwarded again.
import { createConnection, createServer } from 'node:net'
import type { Server, Socket } from 'node:net'
import { once } from 'node:events'

interface Link {
  readonly client: Socket
  upstream: Socket | undefined
  clientId: string | undefined
  held: boolean
}

export interface ProxyStats {
  /** Open connections by client id (`?` before the first request arrived). */
  readonly open: Record<string, number>
  /** Connections held by a cut right now. */
  readonly held: number
  /** Connections ever accepted, and ever held by a cut. */
  readonly accepted: number
  readonly everHeld: number
}

/** Whether a Kafka client id belongs to the process a cut names (`shoal-dispatcher-7` or `shoal-dispatcher-7-…`). */
export function clientMatches(clientId: string, prefix: string): boolean {
  return clientId === prefix || clientId.startsWith(`${prefix}-`)
}

/** The client id of the Kafka request at the start of `buffer`; undefined until enough bytes arrived. */
export function requestClientId(buffer: Buffer): string | null | undefined {
  // size(4) api_key(2) api_version(2) correlation_id(4) client_id length(2)
  if (buffer.length < 14) return undefined
  const length = buffer.readInt16BE(12)
  if (length < 0) return null
  if (buffer.length < 14 + length) return undefined
  return buffer.toString('utf8', 14, 14 + length)
}

export class KafkaProxy {
  readonly #links = new Set<Link>()
  readonly #servers: Server[] = []
  /** Listening port → the broker port it forwards to (set once the brokers run). */
  readonly #targets = new Map<number, number>()
  #cut: string | undefined
  #accepted = 0
  #everHeld = 0

  /** Listens on `count` free loopback ports (one per broker); returns them. */
  async listen(count: number): Promise<number[]> {
    const ports: number[] = []
    for (let i = 0; i < count; i++) {
      const server = createServer(socket => this.#accept(socket, port))
      server.listen(0, '127.0.0.1')
      await once(server, 'listening')
      const port = (server.address() as { port: number }).port
      this.#servers.push(server)
      ports.push(port)
    }
    return ports
  }

  /** Connections to `listenPort` go to 127.0.0.1:`brokerPort`. */
  target(listenPort: number, brokerPort: number): void {
    this.#targets.set(listenPort, brokerPort)
  }

  /** Black-holes every connection, open or new, whose client id matches `prefix`. */
  cut(prefix: string): void {
    this.#cut = prefix
    for (const link of this.#links) {
      if (link.clientId !== undefined && clientMatches(link.clientId, prefix)) this.#hold(link)
    }
  }

  /** Ends the cut: held connections are closed, new ones are forwarded. */
  restore(): void {
    this.#cut = undefined
    for (const link of this.#links) if (link.held) link.client.destroy()
  }

  stats(): ProxyStats {
    const open: Record<string, number> = {}
    let held = 0
    for (const link of this.#links) {
      const id = link.clientId ?? '?'
      open[id] = (open[id] ?? 0) + 1
      if (link.held) held++
    }
    return { open, held, accepted: this.#accepted, everHeld: this.#everHeld }
  }

  async close(): Promise<void> {
    for (const link of this.#links) {
      link.client.destroy()
      link.upstream?.destroy()
    }
    await Promise.all(this.#servers.map(s => new Promise(resolve => s.close(resolve))))
  }

  #accept(client: Socket, listenPort: number): void {
    this.#accepted++
    const link: Link = { client, upstream: undefined, clientId: undefined, held: false }
    this.#links.add(link)
    client.on('error', () => {})
    client.on('close', () => {
      this.#links.delete(link)
      link.upstream?.destroy()
    })
    let buffered = Buffer.alloc(0)
    const onData = (chunk: Buffer): void => {
      buffered = Buffer.concat([buffered, chunk])
      const id = requestClientId(buffered)
      if (id === undefined) return
      client.off('data', onData)
      link.clientId = id ?? ''
      if (this.#cut !== undefined && clientMatches(link.clientId, this.#cut)) {
        this.#hold(link)
        return
      }
      this.#forward(link, listenPort, buffered)
    }
    client.on('data', onData)
  }

  #forward(link: Link, listenPort: number, first: Buffer): void {
    const brokerPort = this.#targets.get(listenPort)
    if (brokerPort === undefined) {
      link.client.destroy()
      return
    }
    const upstream = createConnection({ host: '127.0.0.1', port: brokerPort })
    link.upstream = upstream
    upstream.on('error', () => link.client.destroy())
    upstream.on('close', () => {
      if (!link.held) link.client.destroy()
    })
    upstream.write(first)
    link.client.pipe(upstream)
    upstream.pipe(link.client)
  }

  #hold(link: Link): void {
    if (link.held) return
    link.held = true
    this.#everHeld++
    const { client, upstream } = link
    client.unpipe()
    upstream?.unpipe()
    upstream?.destroy()
    // Swallow whatever the client still sends; answer nothing.
    client.removeAllListeners('data')
    client.on('data', () => {})
    client.resume()
  }
}
