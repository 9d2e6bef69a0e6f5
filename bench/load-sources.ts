// Many sources applied through the API at once (issue 8, item 6): `--ping` PingSources and `--kafka`
// KafkaSources at min-scale 0 (autoscaled, so placed with no consumer), POSTed by `--clients` concurrent clients to
// one `shoal controller`, with two `shoal dispatcher`s offering the schedule slots. Reports the time to apply
// them all, the time until every one is Ready (polling the list endpoints), every error, and the controller's RSS
// per source (its RSS once all are Ready minus its RSS before the first, over the sources).
//
//   npm run bench:load-sources                                  # 5,000 + 5,000, 32 clients
//   npm run bench:load-sources -- --ping 1000 --kafka 1000 --clients 16
import { parseArgs } from 'node:util'
import { Pool } from 'undici'
import { ensureTopics } from '../src/kafka/index.ts'
import { machine, rssBytes, sleep, startKafka, startShoalProcess } from './kafka-source-harness.ts'

const { values } = parseArgs({
  options: {
    ping: { type: 'string', default: '5000' },
    kafka: { type: 'string', default: '5000' },
    clients: { type: 'string', default: '32' },
    'limit-s': { type: 'string', default: '900' }
  }
})
const pings = Number(values.ping)
const kafkas = Number(values.kafka)
const clients = Number(values.clients)
const limitMs = Number(values['limit-s']) * 1000

const kafka = await startKafka()
const prefix = `load${Date.now().toString(36)}`
const topic = `${prefix}-topic`
await ensureTopics({ brokers: kafka.brokers, clientId: 'bench' }, [{ name: topic, partitions: 1, configs: {} }])
const brokers = kafka.brokers.join(',')
const controller = await startShoalProcess(
  ['controller', '--kafka', brokers, '--port', '0', '--prefix', prefix],
  /serving the API on \S+/
)
const api = /serving the API on (\S+)/.exec(controller.line)![1]!
const dispatchers = await Promise.all(
  [0, 1].map(i =>
    startShoalProcess(
      [
        ...['dispatcher', '--kafka', brokers, '--prefix', prefix, '--id', `dispatcher-${i}`],
        ...['--zone', `z${i}`, '--node', `n${i}`, '--capacity', '10', '--schedule-capacity', String(pings)]
      ],
      / up\b/
    )
  )
)
const pool = new Pool(api, { connections: clients })

interface Applied {
  readonly errors: Map<string, number>
  readonly latencies: number[]
}

function manifest(kind: 'ping' | 'kafka', n: number): { path: string; body: string } {
  if (kind === 'ping') {
    return {
      path: '/apis/sources.knative.dev/v1/namespaces/default/pingsources',
      // Once a year: the benchmark measures apply → Ready, not firing.
      body: JSON.stringify({
        apiVersion: 'sources.knative.dev/v1',
        kind: 'PingSource',
        metadata: { name: `ping-${n}` },
        spec: { schedule: '0 0 1 1 *', data: '{"n":' + n + '}', sink: { uri: `http://127.0.0.1:9/ping/${n}` } }
      })
    }
  }
  return {
    path: '/apis/sources.knative.dev/v1beta1/namespaces/default/kafkasources',
    body: JSON.stringify({
      apiVersion: 'sources.knative.dev/v1beta1',
      kind: 'KafkaSource',
      metadata: {
        name: `kafka-${n}`,
        annotations: {
          'autoscaling.eventing.knative.dev/class': 'keda.autoscaling.knative.dev',
          'autoscaling.eventing.knative.dev/min-scale': '0'
        }
      },
      spec: {
        bootstrapServers: [brokers],
        topics: [topic],
        initialOffset: 'latest',
        sink: { uri: `http://127.0.0.1:9/kafka/${n}` }
      }
    })
  }
}

async function applyAll(): Promise<Applied> {
  const work = [
    ...Array.from({ length: pings }, (_, n) => manifest('ping', n)),
    ...Array.from({ length: kafkas }, (_, n) => manifest('kafka', n))
  ]
  const errors = new Map<string, number>()
  const latencies: number[] = []
  let next = 0
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (next < work.length) {
        const { path, body } = work[next++]!
        const started = performance.now()
        try {
          const response = await pool.request({
            method: 'POST',
            path,
            headers: { 'content-type': 'application/json' },
            body
          })
          const text = await response.body.text()
          if (response.statusCode !== 201) {
            const key = `${response.statusCode} ${text.slice(0, 120)}`
            errors.set(key, (errors.get(key) ?? 0) + 1)
          }
        } catch (error) {
          const key = String(error)
          errors.set(key, (errors.get(key) ?? 0) + 1)
        }
        latencies.push(performance.now() - started)
      }
    })
  )
  return { errors, latencies }
}

async function readyCount(): Promise<{ ping: number; kafka: number; notReady: Map<string, number> }> {
  const notReady = new Map<string, number>()
  const count = async (path: string) => {
    const response = await pool.request({ method: 'GET', path })
    const list = (await response.body.json()) as {
      items: Array<{ status?: { conditions?: Array<{ type: string; status: string; reason?: string }> } }>
    }
    let ready = 0
    for (const item of list.items) {
      const conditions = item.status?.conditions ?? []
      if (conditions.some(c => c.type === 'Ready' && c.status === 'True')) ready++
      else {
        const why = conditions
          .filter(c => c.status !== 'True')
          .map(c => `${c.type}:${c.reason ?? ''}`)
          .join(',')
        notReady.set(why, (notReady.get(why) ?? 0) + 1)
      }
    }
    return ready
  }
  return {
    ping: await count('/apis/sources.knative.dev/v1/namespaces/default/pingsources'),
    kafka: await count('/apis/sources.knative.dev/v1beta1/namespaces/default/kafkasources'),
    notReady
  }
}

const percentile = (sorted: readonly number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0

try {
  await sleep(3_000) // the controller settles (buckets, leader) before the measured window
  const rssBefore = rssBytes(controller.pid)
  const started = performance.now()
  const applied = await applyAll()
  const appliedMs = performance.now() - started
  const sorted = [...applied.latencies].sort((a, b) => a - b)
  console.log(
    `applied ${pings + kafkas} sources in ${(appliedMs / 1000).toFixed(1)} s with ${clients} clients ` +
      `(${Math.round((pings + kafkas) / (appliedMs / 1000))}/s; create p50 ${percentile(sorted, 50).toFixed(0)} ms, ` +
      `p99 ${percentile(sorted, 99).toFixed(0)} ms), errors: ${applied.errors.size === 0 ? 'none' : JSON.stringify([...applied.errors])}`
  )
  let ready = await readyCount()
  while (ready.ping < pings || ready.kafka < kafkas) {
    if (performance.now() - started > limitMs) break
    await sleep(2_000)
    ready = await readyCount()
  }
  const readyMs = performance.now() - started
  const rssAfter = rssBytes(controller.pid)
  const all = ready.ping === pings && ready.kafka === kafkas
  console.log(
    `${all ? 'all Ready' : 'NOT all Ready'} ${(readyMs / 1000).toFixed(1)} s after the first create: ` +
      `${ready.ping}/${pings} PingSources, ${ready.kafka}/${kafkas} KafkaSources` +
      (ready.notReady.size > 0 ? `; not ready: ${JSON.stringify([...ready.notReady])}` : '')
  )
  const perSource = (rssAfter - rssBefore) / (pings + kafkas)
  const dispatcherRss = dispatchers.map(d => `${(rssBytes(d.pid) / 2 ** 20).toFixed(0)} MiB`).join(', ')
  console.log(
    `controller RSS ${(rssBefore / 2 ** 20).toFixed(0)} → ${(rssAfter / 2 ** 20).toFixed(0)} MiB: ` +
      `${(perSource / 1024).toFixed(1)} KiB per source; dispatchers ${dispatcherRss}`
  )
  console.log(`\n${machine()}, ${pings} PingSources + ${kafkas} KafkaSources (min-scale 0), ${clients} clients\n`)
  console.log(
    '| sources | clients | applied in | creates/s | create p50 / p99 | errors | all Ready after | controller RSS per source |'
  )
  console.log('|---:|---:|---:|---:|---:|---:|---:|---:|')
  console.log(
    `| ${pings} Ping + ${kafkas} Kafka | ${clients} | ${(appliedMs / 1000).toFixed(1)} s | ${Math.round((pings + kafkas) / (appliedMs / 1000))} | ` +
      `${percentile(sorted, 50).toFixed(0)} / ${percentile(sorted, 99).toFixed(0)} ms | ${[...applied.errors.values()].reduce((a, b) => a + b, 0)} | ` +
      `${all ? `${(readyMs / 1000).toFixed(1)} s` : 'not within the limit'} | ${(perSource / 1024).toFixed(1)} KiB |`
  )
  if (!all || applied.errors.size > 0) process.exitCode = 1
} finally {
  await pool.close()
  await Promise.all(dispatchers.map(d => d.stop()))
  await controller.stop()
  await kafka.stop()
}
