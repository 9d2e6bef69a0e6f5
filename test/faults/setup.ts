// Global set-up of `npm run test:faults` (node --test --test-global-setup): one three-broker embedded Kafka
// (replication 3, min.insync.replicas 2) for every drill, and a small control server through which a drill —
// running in a child process of the test runner — kills and restarts brokers (their JVMs are this process's
// children) and cuts one process off from Kafka.
//
// Every broker has a second listener, PROXIED, advertised at a port of a KafkaProxy (kafka-proxy.ts) in this
// process: a client that bootstraps from SHOAL_FAULTS_PROXIED_SERVERS reaches every broker through the proxy,
// which the control server cuts and restores per Kafka client id.
//
// Environment for the drills: KAFKA_BOOTSTRAP_SERVERS (direct), SHOAL_FAULTS_PROXIED_SERVERS (through the proxy),
// SHOAL_FAULTS_CONTROL (the control server's URL), SHOAL_FAULTS_FIGURES (a file each drill appends its
// figures to, as a JSON line; the runner script prints them as a table).
import { once } from 'node:events'
import { createServer } from 'node:http'
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { isShoalError } from '../../src/errors/index.ts'
import { startEmbeddedKafka } from '../../src/kafka/embedded/index.ts'
import type { EmbeddedKafka } from '../../src/kafka/embedded/index.ts'
import { KafkaProxy } from './kafka-proxy.ts'

let kafka: EmbeddedKafka | undefined
let proxy: KafkaProxy | undefined
let control: Server | undefined

export async function globalSetup(): Promise<void> {
  const started = Date.now()
  proxy = new KafkaProxy()
  const proxyPorts = await proxy.listen(3)
  try {
    kafka = await startEmbeddedKafka({
      brokers: 3,
      port: 0,
      onProgress: line => process.stderr.write(`# ${line}\n`),
      onBrokerExit: (nodeId, exit) =>
        process.stderr.write(`# broker ${nodeId} exited unexpectedly (${exit.signal ?? exit.code})\n`),
      extraListener: { name: 'PROXIED', advertised: nodeId => `127.0.0.1:${proxyPorts[nodeId - 1]!}` }
    })
  } catch (error) {
    if (!isShoalError(error)) throw error
    process.stderr.write(`shoal: the drills' Kafka did not start: ${error.message}\n`)
    process.exit(1)
  }
  for (const broker of kafka.brokers) proxy.target(proxyPorts[broker.nodeId - 1]!, broker.extraListenerPort!)
  control = createServer((req, res) => {
    void handle(req.method ?? 'GET', new URL(req.url ?? '/', 'http://control')).then(
      body => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body ?? {})),
      (error: unknown) => res.writeHead(500).end(String(error))
    )
  })
  control.listen(0, '127.0.0.1')
  await once(control, 'listening')
  process.env.KAFKA_BOOTSTRAP_SERVERS = kafka.bootstrap
  process.env.SHOAL_FAULTS_PROXIED_SERVERS = proxyPorts.map(p => `127.0.0.1:${p}`).join(',')
  process.env.SHOAL_FAULTS_CONTROL = `http://127.0.0.1:${(control.address() as AddressInfo).port}`
  process.stderr.write(
    `# Kafka ${kafka.version}, 3 brokers on ${kafka.bootstrap} (proxied: ${process.env.SHOAL_FAULTS_PROXIED_SERVERS}),` +
      ` ready in ${((Date.now() - started) / 1000).toFixed(1)} s\n`
  )
}

async function handle(method: string, url: URL): Promise<unknown> {
  const cluster = kafka!
  const broker = /^\/brokers\/(\d+)\/(kill|start)$/.exec(url.pathname)
  if (method === 'POST' && broker) {
    const nodeId = Number(broker[1])
    if (broker[2] === 'kill') await cluster.killBroker(nodeId)
    else await cluster.startBroker(nodeId)
    return cluster.brokers
  }
  if (method === 'GET' && url.pathname === '/brokers') return cluster.brokers
  if (method === 'POST' && url.pathname === '/proxy/cut') {
    proxy!.cut(url.searchParams.get('client') ?? '')
    return proxy!.stats()
  }
  if (method === 'POST' && url.pathname === '/proxy/restore') {
    proxy!.restore()
    return proxy!.stats()
  }
  if (method === 'GET' && url.pathname === '/proxy') return proxy!.stats()
  throw new Error(`no ${method} ${url.pathname}`)
}

export async function globalTeardown(): Promise<void> {
  control?.closeAllConnections()
  control?.close()
  await proxy?.close()
  await kafka?.stop()
  kafka = undefined
}
