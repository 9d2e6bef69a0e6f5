// Wake from zero (issue 5): an autoscaled KafkaSource at 0 vreplicas (min-scale 0, cooldown 1 s, the default 1 s
// polling interval), one `shoal controller` and one `shoal dispatcher` process, a sink in this process. Each trial
// waits until the source is at 0 and its consumer group has no member, produces one record, and times first
// produce → first delivery at the sink ("cold"); then, the source awake, one more record ("warm": the same path
// with a consumer already running). Cold − warm is what waking costs.
//
//   npm run bench:autoscale-wake [-- --trials 20]
import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { availableParallelism } from 'node:os'
import { parseArgs } from 'node:util'
import { Admin, Producer } from '@platformatic/kafka'
import { ensureTopics } from '../src/kafka/index.ts'
import { startEmbeddedKafka } from '../src/kafka/embedded/index.ts'
import { getJson, percentile, post, startProcess, until } from './autoscale-processes.ts'

const { values } = parseArgs({ options: { trials: { type: 'string', default: '20' } } })
const trials = Number(values.trials)
const kafka = process.env['KAFKA_BOOTSTRAP_SERVERS'] ? undefined : await startEmbeddedKafka({ port: 0 })
const brokers = process.env['KAFKA_BOOTSTRAP_SERVERS'] ?? kafka!.bootstrap
const prefix = `bench-wake-${process.pid}`
const topic = `${prefix}-topic`
const PARTITIONS = 3
await ensureTopics({ brokers: brokers.split(','), clientId: 'bench-wake' }, [
  { name: topic, partitions: PARTITIONS, configs: {} }
])

const arrivals = new Map<string, number>()
const sink = createServer((req, res) => {
  req.resume()
  req.on('end', () => {
    arrivals.set(String(req.headers['ce-id']), performance.now())
    res.writeHead(202).end()
  })
})
sink.listen(0, '127.0.0.1')
await once(sink, 'listening')
const sinkUrl = `http://127.0.0.1:${(sink.address() as AddressInfo).port}/`

const common = ['--kafka', brokers, '--prefix', prefix, '--liveness-timeout', '3s']
const controller = await startProcess('controller', [...common, '--port', '0'])
const dispatcher = await startProcess('dispatcher', [
  ...common,
  '--id',
  'dispatcher-0',
  '--zone',
  'a',
  '--node',
  'a-1',
  '--capacity',
  '10'
])
const KS = `${controller.url}/apis/sources.knative.dev/v1beta1/namespaces/default/kafkasources`
const created = await post(
  KS,
  `apiVersion: sources.knative.dev/v1beta1
kind: KafkaSource
metadata:
  name: wake
  annotations:
    autoscaling.eventing.knative.dev/class: keda.autoscaling.knative.dev
    autoscaling.eventing.knative.dev/cooldown-period: "1"
spec:
  bootstrapServers: [${brokers}]
  topics: [${topic}]
  sink: {uri: "${sinkUrl}"}
`
)
if (created !== 201) throw new Error(`create answered ${created}`)
type Source = {
  status: { consumers?: number; desiredConsumers?: number; conditions: { type: string; status: string }[] }
  spec: { consumerGroup: string }
}
const source = () => getJson<Source>(`${KS}/wake`)
const group = await until('the initial offsets', async () => {
  const s = await source()
  return s.status.conditions.some(c => c.type === 'InitialOffsetsCommitted' && c.status === 'True')
    ? s.spec.consumerGroup
    : undefined
})
const admin = new Admin({ clientId: 'bench-wake', bootstrapBrokers: brokers.split(',') })
const producer = new Producer({ clientId: 'bench-wake', bootstrapBrokers: brokers.split(','), idempotent: true })

/** Produces one record; resolves with its ce-id and the time just before the send. */
async function produceOne(partition: number): Promise<{ id: string; at: number }> {
  const at = performance.now()
  const result = await producer.send({ acks: -1, messages: [{ topic, partition, value: Buffer.from('wake') }] })
  return { id: `partition:${partition}/offset:${result.offsets![0]!.offset}`, at }
}

const cold: number[] = []
const warm: number[] = []
for (let trial = 0; trial < trials; trial++) {
  await until(
    'the source at zero with an empty group',
    async () => {
      const s = await source()
      if (s.status.desiredConsumers !== 0 || s.status.consumers !== 0) return undefined
      const members = (await admin.describeGroups({ groups: [group] })).get(group)?.members.size ?? 0
      return members === 0 ? true : undefined
    },
    120_000
  )
  const first = await produceOne(trial % PARTITIONS)
  const coldAt = await until('the waking record at the sink', async () => arrivals.get(first.id), 60_000)
  cold.push(coldAt - first.at)
  const second = await produceOne(trial % PARTITIONS)
  const warmAt = await until('the next record at the sink', async () => arrivals.get(second.id), 60_000)
  warm.push(warmAt - second.at)
  process.stderr.write(
    `trial ${trial + 1}: cold ${(coldAt - first.at).toFixed(0)} ms, warm ${(warmAt - second.at).toFixed(0)} ms\n`
  )
}
await producer.close()
await admin.close()
controller.kill('SIGTERM')
dispatcher.kill('SIGTERM')
await Promise.all([controller.exited, dispatcher.exited])
sink.close()
await kafka?.stop()

const row = (name: string, xs: number[]) =>
  `| ${name} | ${xs.length} | ${percentile(xs, 50).toFixed(0)} | ${percentile(xs, 99).toFixed(0)} | ${Math.max(...xs).toFixed(0)} |`
console.log(
  `\nnproc ${availableParallelism()}, Node ${process.version}, ${trials} trials, polling interval 1 s (default)\n`
)
console.log('| produce → first delivery | n | p50 ms | p99 ms | max ms |\n|---|---:|---:|---:|---:|')
console.log(row('cold: source at 0 vreplicas (wake from zero)', cold))
console.log(row('warm: the same source awake (1 vreplica)', warm))
console.log(`\ncold / warm at p50: ${(percentile(cold, 50) / percentile(warm, 50)).toFixed(1)}×`)
