// A three-broker Apache Kafka on the lab's broker hosts: one combined broker+controller node per zone, each
// JVM run inside its host's namespace (`ip netns exec`) and bound to the host's address, `broker.rack` = the
// zone. The settings are the embedded Kafka's (brokerSettings: replication 3, min.insync.replicas 2, fast
// failover) with the listeners, quorum voters and rack put on the hosts' addresses; with a rack on every broker,
// Kafka places each partition's replicas across the racks.

import { Admin } from '@platformatic/kafka'
import type { ChildProcess } from 'node:child_process'
import { existsSync, mkdirSync, openSync, closeSync, readFileSync, writeFileSync } from 'node:fs'
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import {
  KAFKA_VERSION,
  brokerSettings,
  checkJava,
  jvmOptions,
  kafkaLibsDir,
  log4j2Config
} from '../../src/kafka/embedded/index.ts'
import type { BrokerSpec } from '../../src/kafka/embedded/index.ts'
import { hostsOf } from './net.ts'
import type { LabDescription, LabHost } from './net.ts'
import { must, spawnOn } from './lab.ts'

export const KAFKA_PORT = 9092
const CONTROLLER_PORT = 9093

/** One broker of the lab. */
export interface LabBroker {
  readonly nodeId: number
  readonly host: LabHost
  /** `address:9092`. */
  readonly address: string
  readonly rack: string
  readonly dir: string
  readonly pid: number | undefined
}

export interface LabKafka {
  readonly version: string
  /** Every broker's `address:9092`, comma-separated. */
  readonly bootstrap: string
  readonly brokers: readonly LabBroker[]
  /** SIGTERM every broker (controlled shutdown), SIGKILL after 20 s. */
  stop(): Promise<void>
}

/** The settings of one lab broker: the embedded Kafka's, on the host's address, with its zone as rack. */
export function labBrokerSettings(
  broker: { readonly nodeId: number; readonly host: LabHost; readonly logDir: string },
  cluster: ReadonlyArray<{ readonly nodeId: number; readonly host: LabHost }>
): Map<string, string> {
  // brokerSettings builds loopback listeners; every one of them is replaced below.
  const specs: BrokerSpec[] = cluster.map(b => ({
    nodeId: b.nodeId,
    port: KAFKA_PORT,
    controllerPort: CONTROLLER_PORT,
    logDir: b.nodeId === broker.nodeId ? broker.logDir : ''
  }))
  const settings = new Map(
    brokerSettings(
      specs.find(s => s.nodeId === broker.nodeId)!,
      specs
    )
  )
  const address = broker.host.address
  settings.set(
    'controller.quorum.voters',
    cluster.map(b => `${b.nodeId}@${b.host.address}:${CONTROLLER_PORT}`).join(',')
  )
  settings.set('listeners', `PLAINTEXT://${address}:${KAFKA_PORT},CONTROLLER://${address}:${CONTROLLER_PORT}`)
  settings.set('advertised.listeners', `PLAINTEXT://${address}:${KAFKA_PORT}`)
  settings.set('broker.rack', broker.host.zone ?? '')
  return settings
}

/**
 * Formats and starts one broker per broker host of the lab and resolves once each answers metadata listing all
 * three. Must run where the hosts' addresses are reachable: inside the lab (the sink host).
 */
export async function startLabKafka(
  lab: LabDescription,
  options: { readonly onProgress?: (line: string) => void; readonly timeoutMs?: number } = {}
): Promise<LabKafka> {
  const progress = options.onProgress ?? (() => {})
  const java = await checkJava()
  const libs = kafkaLibsDir()
  if (!existsSync(libs)) throw new Error(`Kafka ${KAFKA_VERSION}'s jars are not in ${libs}: run scripts/setup.sh`)
  const hosts = hostsOf(lab, 'broker')
  if (hosts.length !== 3) throw new Error(`the lab's Kafka needs 3 broker hosts, not ${hosts.length}`)
  const cluster = hosts.map((host, i) => ({ nodeId: i + 1, host }))
  // Kafka's Uuid text form; never starting with '-', which the storage tool would take for an option.
  let clusterId = randomBytes(16).toString('base64url')
  while (clusterId.startsWith('-')) clusterId = randomBytes(16).toString('base64url')

  const nodes = cluster.map(b => {
    const dir = join(lab.dir, `kafka-${b.host.name}`)
    mkdirSync(dir, { recursive: true })
    const config = join(dir, 'server.properties')
    const log4jFile = join(dir, 'log4j2.xml')
    const settings = labBrokerSettings({ ...b, logDir: join(dir, 'data') }, cluster)
    writeFileSync(config, [...settings].map(([k, v]) => `${k}=${v}`).join('\n') + '\n')
    writeFileSync(log4jFile, log4j2Config(join(dir, 'server.log')))
    return { ...b, dir, config, log4jFile, child: undefined as ChildProcess | undefined }
  })
  await Promise.all(
    nodes.map(n =>
      must(java, [
        ...jvmOptions(process.env, n.log4jFile),
        '-cp',
        `${libs}/*`,
        'kafka.tools.StorageTool',
        'format',
        '--cluster-id',
        clusterId,
        '--config',
        n.config,
        '--ignore-formatted'
      ])
    )
  )
  for (const n of nodes) {
    progress(
      `Kafka ${KAFKA_VERSION}: broker ${n.nodeId} on ${n.host.address}:${KAFKA_PORT}, rack ${n.host.zone} (${n.host.name})`
    )
    const out = openSync(join(n.dir, 'stdout.log'), 'a')
    try {
      n.child = spawnOn(
        n.host,
        java,
        [...jvmOptions(process.env, n.log4jFile), '-cp', `${libs}/*`, 'kafka.Kafka', n.config],
        {
          stdout: out,
          cwd: n.dir
        }
      )
    } finally {
      closeSync(out)
    }
  }
  const bootstrap = nodes.map(n => `${n.host.address}:${KAFKA_PORT}`).join(',')
  const stop = async (): Promise<void> => {
    await Promise.all(
      nodes.map(async n => {
        const child = n.child
        if (!child || child.exitCode !== null || child.signalCode !== null) return
        const exited = new Promise(resolve => child.once('exit', resolve))
        child.kill('SIGTERM')
        const timer = setTimeout(() => child.kill('SIGKILL'), 20_000)
        await exited
        clearTimeout(timer)
      })
    )
  }
  try {
    const deadline = Date.now() + (options.timeoutMs ?? 120_000)
    for (const n of nodes) await waitReady(`${n.host.address}:${KAFKA_PORT}`, nodes.length, deadline, n.dir)
  } catch (error) {
    await stop()
    throw error
  }
  return {
    version: KAFKA_VERSION,
    bootstrap,
    brokers: nodes.map(n => ({
      nodeId: n.nodeId,
      host: n.host,
      address: `${n.host.address}:${KAFKA_PORT}`,
      rack: n.host.zone ?? '',
      dir: n.dir,
      pid: n.child?.pid
    })),
    stop
  }
}

async function waitReady(address: string, expected: number, deadline: number, dir: string): Promise<void> {
  let last = 'no answer yet'
  while (Date.now() < deadline) {
    const admin = new Admin({
      clientId: 'shoal-lab-ready',
      bootstrapBrokers: [address],
      timeout: 2_000,
      connectTimeout: 1_000,
      retries: 0
    })
    try {
      const metadata = await admin.metadata({ topics: [] })
      if (metadata.brokers.size >= expected) return
      last = `metadata lists ${metadata.brokers.size} of ${expected} brokers`
    } catch (error) {
      last = (error as Error).message
    } finally {
      await admin.close().catch(() => {})
    }
    await new Promise(resolve => setTimeout(resolve, 250))
  }
  const tail = (() => {
    try {
      return readFileSync(join(dir, 'server.log'), 'utf8').trimEnd().split('\n').slice(-20).join('\n')
    } catch {
      return ''
    }
  })()
  throw new Error(`the lab broker at ${address} was not ready in time (${last}); the end of its server.log:\n${tail}`)
}
