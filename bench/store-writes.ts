// The resource store's write rate (issue 8, item 6: what limits applying sources in bulk). One ResourceStore
// (the controller's, without the API or the scheduler in front of it) owns every bucket of an embedded broker;
// `--clients` concurrent writers create `--objects` resources, then write one status for each. Reports writes/s
// and the latency of each write, p50/p99.
//
//   npm run bench:store-writes                                  # 4,000 objects, 64 clients, 16 buckets
//   npm run bench:store-writes -- --objects 2000 --clients 16 --buckets 16
import { parseArgs } from 'node:util'
import { ResourceStore } from '../src/store/index.ts'
import type { WriteOp } from '../src/store/index.ts'
import { machine, sleep, startKafka } from './kafka-source-harness.ts'

const { values } = parseArgs({
  options: {
    objects: { type: 'string', default: '4000' },
    clients: { type: 'string', default: '64' },
    buckets: { type: 'string', default: '16' }
  }
})
const objects = Number(values.objects)
const clients = Number(values.clients)
const buckets = Number(values.buckets)
for (const [name, value] of Object.entries({ objects, clients, buckets })) {
  if (!Number.isSafeInteger(value) || value < 1) throw new Error(`--${name} must be a positive integer`)
}

const kafka = await startKafka()
const store = await ResourceStore.open({
  connection: { brokers: kafka.brokers, clientId: 'bench-store' },
  prefix: `sw${Date.now().toString(36)}`,
  buckets,
  replicaId: 'bench',
  url: 'http://127.0.0.1:1',
  statusOf: () => ({ conditions: [{ type: 'Ready', status: 'Unknown' }] })
})

/** Retries a write while the replica is still taking its buckets over. */
async function write(op: WriteOp): Promise<void> {
  for (;;) {
    try {
      await store.write(op)
      return
    } catch (error) {
      if ((error as { retriable?: boolean }).retriable !== true) throw error
      await sleep(100)
    }
  }
}

async function phase(name: string, ops: (i: number) => WriteOp): Promise<void> {
  const latencies: number[] = []
  let next = 0
  const started = performance.now()
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (next < objects) {
        const i = next++
        const t = performance.now()
        await write(ops(i))
        latencies.push(performance.now() - t)
      }
    })
  )
  const seconds = (performance.now() - started) / 1000
  latencies.sort((a, b) => a - b)
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]!.toFixed(1)
  console.log(
    `${name}: ${objects} in ${seconds.toFixed(2)} s = ${Math.round(objects / seconds)} writes/s; latency p50 ${at(0.5)} ms, p99 ${at(0.99)} ms`
  )
}

const object = (i: number) => ({
  apiVersion: 'sources.knative.dev/v1',
  kind: 'PingSource',
  metadata: { name: `s${i}`, namespace: 'default' },
  spec: { schedule: '0 0 1 1 *', sink: { uri: 'http://127.0.0.1:1/' } }
})

try {
  // Wait until this replica owns every bucket and has opened its writers.
  await write({ kind: 'create', object: object(-1) })
  console.log(`# ${machine()}, ${buckets} buckets, ${clients} clients`)
  await phase('create', i => ({ kind: 'create', object: object(i) }))
  await phase('status', i => ({
    kind: 'status',
    key: `PingSource/default/s${i}`,
    status: { conditions: [{ type: 'Ready', status: 'True' }] }
  }))
} finally {
  await store.close()
  await kafka.stop()
}
