// The PingSource benchmark's sinks, in a process of their own so they never share an event loop with what they
// measure: a fast sink that answers 202 at once and records each event's lateness (arrival − ce-time, the
// nominal tick), and a slow sink that answers after `--slow-delay-ms`, counting its open connections (the file
// descriptors the slow sink costs the dispatcher side). The parent talks to it over IPC.
//
//   forked by bench/ping-sources.ts; not run by hand
import { createServer } from 'node:http'
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { parseArgs } from 'node:util'

export type PingSinkMessage =
  | { readonly type: 'listening'; readonly fastPort: number; readonly slowPort: number }
  | {
      readonly type: 'stats'
      readonly fast: number
      readonly latenessMs: { readonly p50: number; readonly p99: number; readonly max: number }
      /** Per tick (ce-time), events and their lateness. */
      readonly ticks: ReadonlyArray<{
        readonly tick: string
        readonly events: number
        readonly p50: number
        readonly p99: number
        readonly max: number
      }>
      /** The busiest second of fast arrivals (events/s), and the mean rate over each tick's first 5 s. */
      readonly peakPerSecond: number
      readonly slowArrived: number
      readonly slowMaxConnections: number
    }

export type PingSinkCommand = { readonly type: 'reset' } | { readonly type: 'stats' }

const { values } = parseArgs({ options: { 'slow-delay-ms': { type: 'string', default: '120000' } } })
const slowDelayMs = Number(values['slow-delay-ms'])

let lateness: number[] = []
let byTick = new Map<string, number[]>()
let perSecond = new Map<number, number>()
let slowArrived = 0
let slowConnections = 0
let slowMaxConnections = 0

const fast = createServer((req, res) => {
  const now = Date.now()
  req.resume()
  req.on('end', () => {
    const time = String(req.headers['ce-time'])
    const late = now - Date.parse(time)
    lateness.push(late)
    let list = byTick.get(time)
    if (list === undefined) byTick.set(time, (list = []))
    list.push(late)
    const second = Math.floor(now / 1000)
    perSecond.set(second, (perSecond.get(second) ?? 0) + 1)
    res.writeHead(202).end()
  })
})
fast.keepAliveTimeout = 60_000

const slow = createServer((req, res) => {
  slowArrived++
  req.resume()
  req.on('end', () => {
    const timer = setTimeout(() => res.writeHead(202).end(), slowDelayMs)
    res.on('close', () => clearTimeout(timer))
  })
})
slow.keepAliveTimeout = 60_000
slow.on('connection', socket => {
  slowConnections++
  slowMaxConnections = Math.max(slowMaxConnections, slowConnections)
  socket.on('close', () => slowConnections--)
})

function percentiles(sorted: readonly number[]) {
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0
  return { p50: at(0.5), p99: at(0.99), max: sorted[sorted.length - 1] ?? 0 }
}

function listen(server: Server): Promise<number> {
  return new Promise(resolve => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)))
}

process.on('message', (command: PingSinkCommand) => {
  if (command.type === 'reset') {
    lateness = []
    byTick = new Map()
    perSecond = new Map()
    slowArrived = 0
    slowMaxConnections = slowConnections
    return
  }
  const sorted = Float64Array.from(lateness).sort()
  const message: PingSinkMessage = {
    type: 'stats',
    fast: lateness.length,
    latenessMs: percentiles([...sorted]),
    ticks: [...byTick]
      .filter(([, list]) => list.length > 10)
      .map(([tick, list]) => ({ tick, events: list.length, ...percentiles([...Float64Array.from(list).sort()]) })),
    peakPerSecond: Math.max(0, ...perSecond.values()),
    slowArrived,
    slowMaxConnections
  }
  process.send?.(message)
})

const [fastPort, slowPort] = await Promise.all([listen(fast), listen(slow)])
process.send?.({ type: 'listening', fastPort, slowPort } satisfies PingSinkMessage)
process.on('disconnect', () => process.exit(0))
