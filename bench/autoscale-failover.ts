// Scheduler-leader failover (issue 5): three `shoal controller` processes and one `shoal dispatcher`; the leader (the
// owner of bucket 0) is SIGKILLed, and a new source is created through a survivor as soon as one accepts it. Timed
// from the SIGKILL: until a survivor owns bucket 0, and until the first contract written by the new leader (epoch
// above the old one) is in `<prefix>.contracts` — what a dispatcher reads to start work. Group session timeout: the
// default 6 s.
//
//   npm run bench:autoscale-failover [-- --rounds 5]
import { availableParallelism } from 'node:os'
import { parseArgs } from 'node:util'
import { LogTailer } from '../src/kafka/index.ts'
import { startEmbeddedKafka } from '../src/kafka/embedded/index.ts'
import { decodeValue, storeNames } from '../src/store/index.ts'
import { getJson, percentile, post, sleep, startProcess, until } from './autoscale-processes.ts'
import type { Child } from './autoscale-processes.ts'

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '5' } } })
const rounds = Number(values.rounds)
const kafka = process.env['KAFKA_BOOTSTRAP_SERVERS'] ? undefined : await startEmbeddedKafka({ port: 0 })
const brokers = process.env['KAFKA_BOOTSTRAP_SERVERS'] ?? kafka!.bootstrap

const PS = '/apis/sources.knative.dev/v1/namespaces/default/pingsources'
const pingSource = (name: string) =>
  `apiVersion: sources.knative.dev/v1\nkind: PingSource\nmetadata: {name: ${name}}\nspec:\n  schedule: "0 0 1 1 *"\n  sink: {uri: "http://127.0.0.1:9/"}\n`
interface View {
  replicas: Array<{ replicaId: string; url: string; generation: number; buckets: number[] }>
}
const leaderOf = async (url: string) => {
  const view = await getJson<View>(`${url}/internal/v1/controllers`)
  const newest = Math.max(...view.replicas.map(r => r.generation))
  return view.replicas.find(r => r.generation === newest && r.buckets.includes(0))
}

const toBucket0: number[] = []
const toContract: number[] = []
for (let round = 0; round < rounds; round++) {
  const prefix = `bench-leader-${process.pid}-${round}`
  const common = ['--kafka', brokers, '--prefix', prefix, '--liveness-timeout', '3s']
  const controllers: Child[] = await Promise.all(
    [0, 1, 2].map(() => startProcess('controller', [...common, '--port', '0']))
  )
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
  // The new leader's contracts are recognised by their epoch: above every epoch before the kill.
  let maxEpoch = 0
  let firstNewContract: number | undefined
  let epochBeforeKill = Number.MAX_SAFE_INTEGER
  const tailer = new LogTailer({
    connection: { brokers: brokers.split(','), clientId: 'bench-leader-contracts' },
    topics: [storeNames(prefix).contractsTopic],
    onRecord: record => {
      const decoded = decodeValue(record.value, record.headers)
      if (decoded.kind !== 'value') return
      const epoch = (decoded.value as { epoch: number }).epoch
      maxEpoch = Math.max(maxEpoch, epoch)
      if (epoch > epochBeforeKill && firstNewContract === undefined) firstNewContract = performance.now()
    }
  })
  await tailer.start()
  await until('three controllers with a leader', async () => {
    const view = await getJson<View>(`${controllers[0]!.url}/internal/v1/controllers`)
    const newest = Math.max(...view.replicas.map(r => r.generation))
    return view.replicas.filter(r => r.generation === newest).length === 3 && (await leaderOf(controllers[0]!.url))
      ? true
      : undefined
  })
  // Some sources placed, so the leader has written contracts.
  for (let i = 0; i < 10; i++) await post(`${controllers[i % 3]!.url}${PS}`, pingSource(`before-${i}`))
  await until('contracts written', async () => (maxEpoch > 0 ? true : undefined))
  await sleep(500)
  const leader = (await leaderOf(controllers[0]!.url))!
  const victim = controllers.find(c => c.url === leader.url)!
  const survivors = controllers.filter(c => c !== victim)
  epochBeforeKill = maxEpoch
  const killedAt = performance.now()
  victim.kill('SIGKILL')
  // A change the new leader must place: created through a survivor as soon as its bucket's owner takes writes.
  let created = false
  let owned = false
  for (let i = 0; firstNewContract === undefined || !owned; i++) {
    if (!owned) {
      const now = await leaderOf(survivors[0]!.url).catch(() => undefined)
      if (now && now.replicaId !== leader.replicaId) {
        owned = true
        toBucket0.push(performance.now() - killedAt)
      }
    }
    if (!created) created = (await post(`${survivors[i % 2]!.url}${PS}`, pingSource(`after-${i}`))) === 201
    if (performance.now() - killedAt > 120_000) throw new Error('no new leader within 120 s')
    await sleep(20)
  }
  toContract.push(firstNewContract - killedAt)
  process.stderr.write(
    `round ${round + 1}: bucket 0 taken after ${toBucket0.at(-1)!.toFixed(0)} ms, first contract after ${toContract.at(-1)!.toFixed(0)} ms\n`
  )
  await tailer.close()
  for (const c of survivors) c.kill('SIGTERM')
  dispatcher.kill('SIGTERM')
  await Promise.all([...controllers.map(c => c.exited), dispatcher.exited])
}
await kafka?.stop()

const row = (name: string, xs: number[]) =>
  `| ${name} | ${xs.length} | ${percentile(xs, 50).toFixed(0)} | ${percentile(xs, 99).toFixed(0)} | ${Math.max(...xs).toFixed(0)} |`
console.log(`\nnproc ${availableParallelism()}, Node ${process.version}, ${rounds} rounds, group session timeout 6 s\n`)
console.log('| from SIGKILL of the leader | n | p50 ms | p99 ms | max ms |\n|---|---:|---:|---:|---:|')
console.log(row('a survivor owns bucket 0 (leads)', toBucket0))
console.log(row('first contract written by the new leader', toContract))
