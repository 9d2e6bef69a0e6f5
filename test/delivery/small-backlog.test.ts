import assert from 'node:assert/strict'
import type { ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { after, describe, it } from 'node:test'
import { Deliverer } from '../../src/delivery/index.ts'
import type { DeliveryOutcome, DeliveryTarget } from '../../src/delivery/index.ts'
import { resolveDeliveryPolicy } from '../../src/delivery/index.ts'
import { startPythonSink } from '../sinks/python-sink.ts'
import { eventually } from '../helpers/wait.ts'

// Sinks that accept connections slowly or not at all for a while: Python's standard-library server (listen
// backlog 5) under a burst from several dispatchers, one whose accept queue overflows while it stalls, one that
// restarts. Each request here may be tried once (retry: 0) within a 60 s timeout: a request held by a connection
// the sink never accepted (about two minutes on Linux), or one that fails because the sink was not listening for
// a moment, is an event dropped, and the test sees it.

const children: ChildProcess[] = []
const deliverers: Deliverer[] = []
after(async () => {
  await Promise.all(deliverers.map(d => d.close()))
  for (const child of children) child.kill('SIGKILL')
})

interface PythonSink {
  readonly url: string
  /** Event ids in the order the sink answered them. */
  readonly received: string[]
}

/**
 * The distinct events the sink says it answered, once it has said so for `count`: its line for an event is read from
 * its output, which can come after the answer itself reached the deliverer.
 */
async function answeredBy(sink: PythonSink, count: number): Promise<number> {
  await eventually(
    () => new Set(sink.received).size >= count,
    10_000,
    () => `${count} answers in the sink's output (${new Set(sink.received).size})`
  ).catch(() => undefined)
  return new Set(sink.received).size
}

async function pythonSink(...args: string[]): Promise<PythonSink> {
  const received: string[] = []
  const sink = await startPythonSink(args, line => void (line.kind === 'answered' && received.push(line.id)))
  children.push(sink.child)
  return { url: sink.url, received }
}

function target(url: string, sourceKey: string): DeliveryTarget {
  return { sourceKey, sink: { uri: url }, policy: resolveDeliveryPolicy({ retry: 0, timeout: 'PT60S' }) }
}

function event(id: string) {
  return {
    attributes: { specversion: '1.0' as const, id, source: '/test/small-backlog', type: 'dev.shoal.test' },
    extensions: {},
    data: Buffer.from('{}')
  }
}

async function burst(deliverer: Deliverer, url: string, prefix: string, count: number): Promise<DeliveryOutcome[]> {
  const t = target(url, `KafkaSource/test/${prefix}`)
  return Promise.all(Array.from({ length: count }, (_, i) => deliverer.deliver(event(`${prefix}-${i}`), t)))
}

function undelivered(outcomes: readonly DeliveryOutcome[]): string[] {
  return outcomes.filter(o => o.kind !== 'delivered').map(o => JSON.stringify(o))
}

describe('sinks that close connections early', () => {
  it('a sink that drops each keep-alive connection after its third answer: every event delivered on its one try', async () => {
    const answered = new Map<Socket, number>()
    const server = createServer((request, response) => {
      request.resume()
      request.on('end', () => {
        const count = (answered.get(request.socket) ?? 0) + 1
        answered.set(request.socket, count)
        // No `Connection: close`: the connection just goes, as a sink's idle or per-connection limit does it.
        response.writeHead(202, { 'content-length': '0' }).end(() => {
          // A moment later: the client may have written its next request into it by then.
          if (count % 3 === 0) setTimeout(() => request.socket.destroy(), 2)
        })
      })
    })
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    const { port } = server.address() as AddressInfo
    const deliverer = new Deliverer({ maxConnectionsPerOrigin: 8 })
    deliverers.push(deliverer)
    try {
      // Eight workers, each sending its next event as soon as the last is answered: requests keep going out on
      // connections the sink is closing.
      const t = target(`http://127.0.0.1:${port}/`, 'KafkaSource/test/cut')
      const outcomes: DeliveryOutcome[] = []
      let next = 0
      await Promise.all(
        Array.from({ length: 8 }, async () => {
          while (next < 1_200) outcomes.push(await deliverer.deliver(event(`cut-${next++}`), t))
        })
      )
      assert.deepEqual(undelivered(outcomes), [])
    } finally {
      server.closeAllConnections()
      server.close()
    }
  })
})

describe('sinks with a small accept backlog', () => {
  it('a burst from three dispatchers to a Python http.server sink (backlog 5): every event delivered on its one try', async () => {
    const sink = await pythonSink('--delay-ms', '10')
    const three = [new Deliverer(), new Deliverer(), new Deliverer()]
    deliverers.push(...three)
    const outcomes = (await Promise.all(three.map((d, i) => burst(d, sink.url, `d${i}`, 600)))).flat()
    assert.deepEqual(undelivered(outcomes), [])
    assert.equal(await answeredBy(sink, 1_800), 1_800)
  })

  it('connections dropped by an overflowing accept queue are found and their requests sent again, counted', async () => {
    // Listening with a backlog of 1 and accepting nothing for 3 s: the handshakes past the queue are dropped.
    const sink = await pythonSink('--backlog', '1', '--stall-ms', '3000')
    const deliverer = new Deliverer()
    deliverers.push(deliverer)
    // Connections proven on a first small burst grow the window, so the second opens more than the queue holds.
    const outcomes = await burst(deliverer, sink.url, 'stall', 64)
    assert.deepEqual(undelivered(outcomes), [])
    assert.equal(await answeredBy(sink, 64), 64)
    const [figures] = deliverer.sinks()
    assert.equal(figures?.inFlight, 0)
    assert.ok((figures?.resent ?? 0) >= (figures?.notAccepted ?? 0), JSON.stringify(figures))
  })

  it('a sink that is not listening for a moment (a restart) gets its events without a retry used', async () => {
    const server = createServer((request, response) => {
      request.resume()
      request.on('end', () => response.writeHead(202).end())
    })
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    const { port } = server.address() as AddressInfo
    server.close()
    await once(server, 'close')
    const deliverer = new Deliverer()
    deliverers.push(deliverer)
    const sent = burst(deliverer, `http://127.0.0.1:${port}/`, 'restart', 20)
    // Back after a second and a half, on the same port.
    await new Promise(resolve => setTimeout(resolve, 1_500))
    server.listen(port, '127.0.0.1')
    await once(server, 'listening')
    try {
      assert.deepEqual(undelivered(await sent), [])
      assert.ok((deliverer.sinks()[0]?.resent ?? 0) >= 1)
    } finally {
      server.closeAllConnections()
      server.close()
    }
  })
})
