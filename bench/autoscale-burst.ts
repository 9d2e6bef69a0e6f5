// Burst follow (issue 5): 100,000 records land at once on a 12-partition topic whose KafkaSource is autoscaled and
// at 0 vreplicas (min-scale 0, lag-threshold 100, so the target is min(ceil(100000 / 100), 12 partitions) = 12). One
// `shoal controller` and three `shoal dispatcher` processes (10 consumer slots each, zones a, b, c), a sink in this
// process answering 202 at once. Timed from the first record sent: the first placed consumer, placed consumers at
// the target (the scheduler's placements, Knative's status.consumers), and 12 members in the source's consumer group
// (the consumers actually running); sampled every 250 ms for the timeline. Each trial starts once the autoscaler has
// polled the idle source, so the burst lands anywhere in its polling cycle. The in-run peer: the same burst with
// KEDA's default polling interval (30 s) set on the source — what the lag-driven part of KEDA would give, before
// its pod start, which does not exist here.
//
//   npm run bench:autoscale-burst [-- --trials 3 --records 100000 --keda-trials 1]
import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { availableParallelism } from 'node:os'
import { parseArgs } from 'node:util'
import { Admin, Producer } from '@platformatic/kafka'
import { ensureTopics } from '../src/kafka/index.ts'
import { startEmbeddedKafka } from '../src/kafka/embedded/index.ts'
import { getJson, percentile, post, startProcess, until } from './autoscale-processes.ts'

const { values } = parseArgs({
  options: {
    trials: { type: 'string', default: '3' },
    'keda-trials': { type: 'string', default: '1' },
    records: { type: 'string', default: '100000' }
  }
})
const trials = Number(values.trials)
const kedaTrials = Number(values['keda-trials'])
const records = Number(values.records)
const PARTITIONS = 12
const TARGET = Math.min(Math.ceil(records / 100), PARTITIONS)

const kafka = process.env['KAFKA_BOOTSTRAP_SERVERS'] ? undefined : await startEmbeddedKafka({ port: 0 })
const brokers = process.env['KAFKA_BOOTSTRAP_SERVERS'] ?? kafka!.bootstrap
const prefix = `bench-burst-${process.pid}`

let delivered = 0
const sink = createServer((req, res) => {
  req.resume()
  req.on('end', () => {
    delivered++
    res.writeHead(202).end()
  })
})
sink.listen(0, '127.0.0.1')
await once(sink, 'listening')
const sinkUrl = `http://127.0.0.1:${(sink.address() as AddressInfo).port}/`

const common = ['--kafka', brokers, '--prefix', prefix, '--liveness-timeout', '3s']
const controller = await startProcess('controller', [...common, '--port', '0'])
const dispatchers = await Promise.all(
  ['a', 'b', 'c'].map((zone, i) =>
    startProcess('dispatcher', [
      ...common,
      ...['--id', `dispatcher-${i}`, '--zone', zone, '--node', `${zone}-1`, '--capacity', '10']
    ])
  )
)
const KS = `${controller.url}/apis/sources.knative.dev/v1beta1/namespaces/default/kafkasources`
const admin = new Admin({ clientId: 'bench-burst', bootstrapBrokers: brokers.split(',') })
const producer = new Producer({ clientId: 'bench-burst', bootstrapBrokers: brokers.split(','), idempotent: true })
const value = Buffer.alloc(100, 'x')

type Source = {
  status: { consumers?: number; desiredConsumers?: number; conditions: { type: string; status: string }[] }
  spec: { consumerGroup: string }
}

interface Sample {
  readonly t: number
  readonly desired: number
  readonly placed: number
  readonly members: number
  readonly delivered: number
}

interface Trial {
  readonly landedMs: number
  readonly firstPlacedMs: number
  readonly placedMs: number
  readonly membersMs: number
  readonly samples: readonly Sample[]
}

async function trial(n: number, pollingSeconds: number): Promise<Trial> {
  const name = `burst-${pollingSeconds}-${n}`
  const topic = `${prefix}-${name}`
  await ensureTopics({ brokers: brokers.split(','), clientId: 'bench-burst' }, [
    { name: topic, partitions: PARTITIONS, configs: {} }
  ])
  const created = await post(
    KS,
    `apiVersion: sources.knative.dev/v1beta1
kind: KafkaSource
metadata:
  name: ${name}
  annotations:
    autoscaling.eventing.knative.dev/class: keda.autoscaling.knative.dev
    autoscaling.eventing.knative.dev/min-scale: "0"
    autoscaling.eventing.knative.dev/lag-threshold: "100"
    autoscaling.eventing.knative.dev/polling-interval: "${pollingSeconds}"
spec:
  bootstrapServers: [${brokers}]
  topics: [${topic}]
  ordering: unordered
  sink: {uri: "${sinkUrl}"}
`
  )
  if (created !== 201) throw new Error(`create answered ${created}`)
  const source = () => getJson<Source>(`${KS}/${name}`)
  const group = await until('the initial offsets and 0 vreplicas', async () => {
    const s = await source()
    return s.status.conditions.some(c => c.type === 'InitialOffsetsCommitted' && c.status === 'True') &&
      s.status.consumers === 0
      ? s.spec.consumerGroup
      : undefined
  })
  // Polled once at lag 0 first, so the burst meets the polling cycle anywhere in it, as a burst in the field does.
  await until('a first poll of the idle source', async () => {
    const view = await getJson<{ items: Array<{ source: string; polledAt?: string; lag?: number }> }>(
      `${controller.url}/shoal/v1/autoscaling`
    )
    const item = view.items.find(i => i.source === `KafkaSource/default/${name}`)
    return item?.polledAt !== undefined && item.lag === 0 ? true : undefined
  })
  const before = delivered
  const samples: Sample[] = []
  const start = performance.now()
  let sampling = true
  const sampler = (async () => {
    while (sampling) {
      const at = performance.now()
      const [s, described] = await Promise.all([
        source().catch(() => undefined),
        admin.describeGroups({ groups: [group] }).catch(() => undefined)
      ])
      samples.push({
        t: at - start,
        desired: s?.status.desiredConsumers ?? -1,
        placed: s?.status.consumers ?? -1,
        members: described?.get(group)?.members.size ?? -1,
        delivered: delivered - before
      })
      await new Promise(resolve => setTimeout(resolve, Math.max(0, 250 - (performance.now() - at))))
    }
  })()
  // 100k records, as fast as one idempotent producer sends them: 1,000 per request, 4 requests in flight.
  const batches = Array.from({ length: Math.ceil(records / 1000) }, (_, b) =>
    Array.from({ length: Math.min(1000, records - b * 1000) }, (_, i) => ({
      topic,
      partition: (b * 1000 + i) % PARTITIONS,
      value
    }))
  )
  let next = 0
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (next < batches.length) await producer.send({ acks: -1, messages: batches[next++]! })
    })
  )
  const landedMs = performance.now() - start
  await until(
    'placed consumers and group members at the target',
    async () => {
      const last = samples.at(-1)
      return last && last.placed >= TARGET && last.members >= TARGET ? true : undefined
    },
    180_000
  )
  sampling = false
  await sampler
  const firstAt = (f: (s: Sample) => boolean) => samples.find(f)?.t ?? NaN
  const result: Trial = {
    landedMs,
    firstPlacedMs: firstAt(s => s.placed >= 1),
    placedMs: firstAt(s => s.placed >= TARGET),
    membersMs: firstAt(s => s.members >= TARGET),
    samples
  }
  process.stderr.write(
    `${name}: landed ${landedMs.toFixed(0)} ms, first placed ${result.firstPlacedMs.toFixed(0)} ms, ${TARGET} placed ${result.placedMs.toFixed(0)} ms, ${TARGET} group members ${result.membersMs.toFixed(0)} ms\n`
  )
  // Deleted: its consumers leave, so the next trial starts from an idle pool.
  await fetch(`${KS}/${name}`, { method: 'DELETE' }).then(r => r.text())
  await until('the deleted source’s group empty', async () => {
    const members = (await admin.describeGroups({ groups: [group] })).get(group)?.members.size ?? 0
    return members === 0 ? true : undefined
  })
  return result
}

const fast: Trial[] = []
for (let n = 0; n < trials; n++) fast.push(await trial(n, 1))
const keda: Trial[] = []
for (let n = 0; n < kedaTrials; n++) keda.push(await trial(n, 30))

await producer.close()
await admin.close()
controller.kill('SIGTERM')
for (const d of dispatchers) d.kill('SIGTERM')
await Promise.all([controller.exited, ...dispatchers.map(d => d.exited)])
sink.close()
await kafka?.stop()

const ms = (x: number) => (Number.isFinite(x) ? Math.round(x).toLocaleString('en-US') : '—')
const row = (name: string, ts: readonly Trial[], f: (t: Trial) => number) => {
  const xs = ts.map(f)
  return `| ${name} | ${xs.length} | ${ms(percentile(xs, 50))} | ${ms(Math.max(...xs))} |`
}
console.log(
  `\nnproc ${availableParallelism()}, Node ${process.version}, ${records.toLocaleString('en-US')} records of 100 B on ${PARTITIONS} partitions, target ${TARGET} consumers, 3 dispatchers × 10 slots\n`
)
console.log('| from the first record sent | n | p50 ms | max ms |\n|---|---:|---:|---:|')
console.log(row('all records landed (acks=all)', fast, t => t.landedMs))
console.log(row('first consumer placed (polling 1 s, the default)', fast, t => t.firstPlacedMs))
console.log(row(`${TARGET} consumers placed (polling 1 s)`, fast, t => t.placedMs))
console.log(row(`${TARGET} members in the consumer group (polling 1 s)`, fast, t => t.membersMs))
if (keda.length > 0) {
  console.log(row(`${TARGET} consumers placed (polling 30 s, KEDA's default)`, keda, t => t.placedMs))
  console.log(row(`${TARGET} members in the consumer group (polling 30 s)`, keda, t => t.membersMs))
  console.log(
    `\npolling 30 s / polling 1 s, ${TARGET} placed at p50: ${(
      percentile(
        keda.map(t => t.placedMs),
        50
      ) /
      percentile(
        fast.map(t => t.placedMs),
        50
      )
    ).toFixed(1)}×`
  )
}
const first = fast[0]!
console.log(
  `\nTimeline of the first trial (polling 1 s), one sample a second, until every record had landed and the target was reached:\n`
)
console.log('| t s | desired | placed | group members | delivered |\n|---:|---:|---:|---:|---:|')
let shown = -1
for (const s of first.samples) {
  const second = Math.floor(s.t / 1000)
  if (second === shown && s !== first.samples.at(-1)) continue
  shown = second
  console.log(
    `| ${(s.t / 1000).toFixed(2)} | ${s.desired} | ${s.placed} | ${s.members} | ${s.delivered.toLocaleString('en-US')} |`
  )
}
