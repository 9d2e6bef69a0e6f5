// The in-flight benchmark's peer: a bare undici request loop, the way one holds many requests by hand — one
// Pool per sink origin (no connection cap), `pool.request()` per event with CloudEvent headers and a 1 KiB body
// of its own, awaiting the answer and dumping its body. No Kafka. The parent talks to it over IPC: `warm` sends
// a few requests per origin (the sinks answer at once then), `go` starts `count` requests spread over the
// origins; it reports `warm` and `started` (every request handed to undici).
//
//   forked by bench/kafka-source-inflight.ts; not run by hand
import { parseArgs } from 'node:util'
import { Pool } from 'undici'

export type PeerCommand =
  { readonly type: 'warm'; readonly perOrigin: number } | { readonly type: 'go'; readonly count: number }
export type PeerMessage =
  { readonly type: 'warm' } | { readonly type: 'started' } | { readonly type: 'error'; readonly error: string }

const { values } = parseArgs({
  options: { sinks: { type: 'string' }, 'record-bytes': { type: 'string', default: '1024' } }
})
const origins = values.sinks!.split(',')
const recordBytes = Number(values['record-bytes'])
const pools = origins.map(origin => new Pool(origin, { pipelining: 1 }))
const send = (message: PeerMessage) => process.send!(message)
let sent = 0
let errors = 0

async function one(pool: Pool): Promise<void> {
  const n = sent++
  const body = Buffer.allocUnsafe(recordBytes).fill(n & 0xff)
  try {
    const response = await pool.request({
      method: 'POST',
      path: '/',
      headers: {
        'content-type': 'application/octet-stream',
        'ce-specversion': '1.0',
        'ce-id': `partition:${n % 8}/offset:${n}`,
        'ce-source': '/apis/v1/namespaces/default/kafkasources/peer#peer',
        'ce-type': 'dev.knative.kafka.event',
        'ce-subject': `partition:${n % 8}#${n}`,
        'ce-time': new Date().toISOString(),
        'ce-key': `k${n}`
      },
      body,
      headersTimeout: 0,
      bodyTimeout: 0
    })
    await response.body.dump()
  } catch (error) {
    if (errors++ === 0) send({ type: 'error', error: String(error) })
  }
}

process.on('message', (command: PeerCommand) => {
  if (command.type === 'warm') {
    const all: Promise<void>[] = []
    for (const pool of pools) for (let i = 0; i < command.perOrigin; i++) all.push(one(pool))
    void Promise.all(all).then(() => send({ type: 'warm' }))
  } else {
    for (let i = 0; i < command.count; i++) void one(pools[i % pools.length]!)
    send({ type: 'started' })
  }
})
process.on('disconnect', () => process.exit(0))
