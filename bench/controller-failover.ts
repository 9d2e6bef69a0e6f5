// Controller failover and API latency, against a real broker: two `shoal controller` processes share the
// buckets; one is SIGKILLed; we time until the survivor owns every bucket and until a write to a bucket the
// dead one owned succeeds. Also the latency of creates (forwarded or not) and reads.
//
//   npm run bench:failover [-- --rounds 5]
import { spawn } from 'node:child_process'
import { availableParallelism } from 'node:os'
import { createInterface } from 'node:readline'
import { parseArgs } from 'node:util'
import { startEmbeddedKafka } from '../src/kafka/embedded/index.ts'

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '5' } } })
const rounds = Number(values.rounds)
const bin = new URL('../bin/shoal.js', import.meta.url).pathname

const kafka = process.env['KAFKA_BOOTSTRAP_SERVERS'] ? undefined : await startEmbeddedKafka({ port: 0 })
const brokers = process.env['KAFKA_BOOTSTRAP_SERVERS'] ?? kafka!.bootstrap

function startController(
  prefix: string
): Promise<{ url: string; kill: (s: NodeJS.Signals) => void; exited: Promise<void> }> {
  const child = spawn(
    process.execPath,
    [bin, 'controller', '--kafka', brokers, '--port', '0', '--prefix', prefix, '--buckets', '8'],
    {
      env: { ...process.env, SHOAL_LOG_LEVEL: 'error' },
      stdio: ['ignore', 'pipe', 'inherit']
    }
  )
  const exited = new Promise<void>(resolve => child.once('exit', () => resolve()))
  return new Promise((resolve, reject) => {
    createInterface({ input: child.stdout }).on('line', line => {
      const url = /serving the API on (\S+)/.exec(line)?.[1]
      if (url) resolve({ url, kill: s => child.kill(s), exited })
    })
    child.once('exit', code => reject(new Error(`controller exited ${code}`)))
  })
}

const json = async (method: string, url: string, body?: string) => {
  const r = await fetch(url, { method, ...(body ? { body, headers: { 'content-type': 'application/yaml' } } : {}) })
  return { status: r.status, body: (await r.json()) as { self?: { buckets: number[] }; buckets?: number } }
}
const source = (name: string) =>
  `apiVersion: sources.knative.dev/v1\nkind: PingSource\nmetadata: {name: ${name}}\nspec:\n  schedule: "* * * * *"\n  sink: {uri: "http://127.0.0.1:9/"}\n`
const PS = '/apis/sources.knative.dev/v1/namespaces/default/pingsources'
const percentile = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!

const takeover: number[] = []
const firstWrite: number[] = []
const creates: number[] = []
const reads: number[] = []
for (let round = 0; round < rounds; round++) {
  const prefix = `bench-failover-${process.pid}-${round}`
  const [a, b] = await Promise.all([startController(prefix), startController(prefix)])
  for (;;) {
    const view = (await fetch(`${a.url}/internal/v1/controllers`).then(r => r.json())) as { replicas: unknown[] }
    if (view.replicas.length === 2) break
    await new Promise(r => setTimeout(r, 100))
  }
  // Steady state: creates through either replica (half are forwarded), then reads.
  for (let i = 0; i < 100; i++) {
    const t = performance.now()
    const r = await json('POST', `${(i % 2 ? a : b).url}${PS}`, source(`s-${round}-${i}`))
    if (r.status !== 201) throw new Error(`create answered ${r.status}`)
    creates.push(performance.now() - t)
  }
  for (let i = 0; i < 100; i++) {
    const t = performance.now()
    await json('GET', `${a.url}${PS}/s-${round}-${i}`)
    reads.push(performance.now() - t)
  }
  const killedAt = performance.now()
  b.kill('SIGKILL')
  let owned = false
  let wrote = false
  for (let i = 0; !owned || !wrote; i++) {
    if (!owned) {
      const view = (await json('GET', `${a.url}/internal/v1/controllers`)).body
      if (view.self!.buckets.length === view.buckets) {
        owned = true
        takeover.push(performance.now() - killedAt)
      }
    }
    if (!wrote) {
      // Names spread over every bucket; the first that lands after the kill counts once all buckets take writes.
      const results = await Promise.all(
        Array.from({ length: 8 }, (_, k) => json('POST', `${a.url}${PS}`, source(`after-${round}-${i}-${k}`)))
      )
      if (results.every(r => r.status === 201)) {
        wrote = true
        firstWrite.push(performance.now() - killedAt)
      }
    }
    await new Promise(r => setTimeout(r, 50))
  }
  a.kill('SIGTERM')
  await Promise.all([a.exited, b.exited])
}
await kafka?.stop()

const row = (name: string, xs: number[]) =>
  `| ${name} | ${xs.length} | ${percentile(xs, 50).toFixed(1)} | ${percentile(xs, 99).toFixed(1)} | ${Math.max(...xs).toFixed(1)} |`
console.log(`\nnproc ${availableParallelism()}, Node ${process.version}, ${rounds} rounds, group session timeout 6 s\n`)
console.log('| measure | n | p50 ms | p99 ms | max ms |\n|---|---:|---:|---:|---:|')
console.log(row('create (half forwarded to the owner)', creates))
console.log(row('read', reads))
console.log(row('SIGKILL → survivor owns every bucket', takeover))
console.log(row('SIGKILL → writes to every bucket succeed', firstWrite))
