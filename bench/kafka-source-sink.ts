// The benchmarks' sink, in a process of its own so it never shares an event loop with what it measures: a
// node:http server that answers 202 at once (or after `--delay-ms`) and counts requests. The parent talks to
// it over IPC: `reset` starts a count, `stats` reads it. With `--check-order` it also counts, per partition,
// events that arrive at an offset not above the last one seen (from the `ce-id` Shoal sets). With `--count-ids`
// it counts distinct `ce-id`s, and requests whose `ce-id` it has seen before (duplicates). With `--log-ids` it
// also keeps every request's `ce-id` and arrival time, which `deliveries` hands over. With `--count-events` it
// reads every body and counts events: a CloudEvents batch (`application/cloudevents-batch+json`) is parsed and
// counts its array's length, any other request one — so a batch costs the sink what a sink needs to use it.
//
//   forked by bench/kafka-source-harness.ts; not run by hand
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { parseArgs } from 'node:util'
import { SinkTally } from './sink-tally.ts'

/** What the sink tells its parent. */
export type SinkMessage =
  | { readonly type: 'listening'; readonly port: number }
  | {
      readonly type: 'stats'
      readonly count: number
      /** Events received: with --count-events a batch counts its length, else every request counts one. */
      readonly events: number
      /** Milliseconds from the first to the last request counted since the reset; 0 before two arrive. */
      readonly spanMs: number
      /** Milliseconds since the first request counted; 0 before one arrives. */
      readonly sinceFirstMs: number
      readonly outOfOrder: number
      /** With --count-ids: distinct `ce-id`s, and requests with a `ce-id` seen before; 0 without. */
      readonly unique: number
      readonly duplicates: number
      /** Per partition seen (only with --check-order): requests, and milliseconds from its first to its last. */
      readonly partitions: ReadonlyArray<{
        readonly partition: number
        readonly count: number
        readonly spanMs: number
      }>
    }
  | {
      readonly type: 'deliveries'
      /** With --log-ids: every request's `ce-id` since the reset, in arrival order, and its arrival time. */
      readonly ids: readonly string[]
      /** Milliseconds since the epoch (`performance.timeOrigin + performance.now()`), one per id. */
      readonly at: readonly number[]
    }

/** What the parent tells the sink. */
export type SinkCommand = { readonly type: 'reset' } | { readonly type: 'stats' } | { readonly type: 'deliveries' }

const { values } = parseArgs({
  options: {
    'delay-ms': { type: 'string', default: '0' },
    'check-order': { type: 'boolean', default: false },
    'count-ids': { type: 'boolean', default: false },
    'log-ids': { type: 'boolean', default: false },
    'count-events': { type: 'boolean', default: false }
  }
})
const delayMs = Number(values['delay-ms'])
const checkOrder = values['check-order']
const countIds = values['count-ids']
const logIds = values['log-ids']
const countEvents = values['count-events']

const tally = new SinkTally({ checkOrder, countIds, logIds })

const server = createServer((req, res) => {
  const now = performance.now()
  const id = String(req.headers['ce-id'])
  const answer = () => {
    if (delayMs > 0) setTimeout(() => res.writeHead(202).end(), delayMs)
    else res.writeHead(202).end()
  }
  if (!countEvents) {
    tally.request(id, now)
    req.resume()
    answer()
    return
  }
  const chunks: Buffer[] = []
  req.on('data', (chunk: Buffer) => chunks.push(chunk))
  req.on('end', () => {
    const body = Buffer.concat(chunks)
    const batch = req.headers['content-type'] === 'application/cloudevents-batch+json'
    tally.request(id, now, batch ? (JSON.parse(body.toString('utf8')) as unknown[]).length : 1)
    answer()
  })
})
server.keepAliveTimeout = 30_000

const send = (message: SinkMessage) => process.send!(message)

process.on('message', (command: SinkCommand) => {
  if (command.type === 'deliveries') {
    send(tally.deliveries())
    return
  }
  if (command.type === 'reset') tally.reset()
  send(tally.stats(performance.now()))
})
// The parent going away ends the sink.
process.on('disconnect', () => process.exit(0))

server.listen(0, '127.0.0.1', () => send({ type: 'listening', port: (server.address() as AddressInfo).port }))
