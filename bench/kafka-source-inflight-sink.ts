// The in-flight benchmark's sink, one process per loopback address: a node:http server on `--host` that holds
// every request's answer (202) for `--hold-ms` after it arrives — or answers at once while the hold is 0 — and
// counts requests and answers held. The parent talks to it over IPC: `hold` sets the hold for requests from now
// on, `release` answers every held request at once, `stats` reads the counts.
//
//   forked by bench/kafka-source-inflight.ts; not run by hand
import { createServer } from 'node:http'
import type { ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { parseArgs } from 'node:util'

/** What the sink tells its parent. */
export type HoldSinkMessage =
  | { readonly type: 'listening'; readonly port: number }
  | {
      readonly type: 'stats'
      /** Requests since the sink started. */
      readonly count: number
      /** Answers held now. */
      readonly held: number
      /** The most held at once since the last `hold`. */
      readonly maxHeld: number
    }

/** What the parent tells the sink. */
export type HoldSinkCommand =
  { readonly type: 'hold'; readonly ms: number } | { readonly type: 'release' } | { readonly type: 'stats' }

const { values } = parseArgs({
  options: {
    host: { type: 'string', default: '127.0.0.1' },
    'hold-ms': { type: 'string', default: '0' }
  }
})

let holdMs = Number(values['hold-ms'])
let count = 0
let maxHeld = 0
// Held answers in arrival order, each with its timer.
const held = new Set<{ res: ServerResponse; timer: NodeJS.Timeout }>()

const server = createServer((req, res) => {
  count++
  req.resume()
  if (holdMs <= 0) {
    res.writeHead(202).end()
    return
  }
  const entry = {
    res,
    timer: setTimeout(() => {
      held.delete(entry)
      res.writeHead(202).end()
    }, holdMs)
  }
  held.add(entry)
  if (held.size > maxHeld) maxHeld = held.size
})
// Held requests must not be cut short by the server's own timeouts.
server.requestTimeout = 0
server.headersTimeout = 60_000
server.keepAliveTimeout = 30_000
server.maxHeadersCount = 100

const send = (message: HoldSinkMessage) => process.send!(message)

process.on('message', (command: HoldSinkCommand) => {
  if (command.type === 'hold') {
    holdMs = command.ms
    maxHeld = held.size
  } else if (command.type === 'release') {
    for (const entry of held) {
      clearTimeout(entry.timer)
      entry.res.writeHead(202).end()
    }
    held.clear()
  }
  send({ type: 'stats', count, held: held.size, maxHeld })
})
// The parent going away ends the sink.
process.on('disconnect', () => process.exit(0))

server.listen({ port: 0, host: values.host, backlog: 4096 }, () =>
  send({ type: 'listening', port: (server.address() as AddressInfo).port })
)
