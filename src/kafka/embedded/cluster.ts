import { randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { ErrorCodes, ShoalError, isShoalError } from '../../errors/index.ts'
import { launchJava, runJavaTool, tailFile } from './broker-process.ts'
import type { JavaProcess } from './broker-process.ts'
import { LOOPBACK, log4j2Config, serverProperties } from './config.ts'
import type { BrokerSpec } from './config.ts'
import type { EmbeddedBrokerInfo, EmbeddedKafka, StartEmbeddedKafkaOptions } from './embedded-kafka.ts'
import { checkJava } from './java.ts'
import { ensureKafkaJars } from './jars.ts'
import { assertPortFree, freePorts } from './ports.ts'
import { waitForBroker } from './ready.ts'
import { KAFKA_VERSION } from './version.ts'

const MAIN_CLASS = 'kafka.Kafka'
const STORAGE_TOOL_CLASS = 'kafka.tools.StorageTool'
/** Attempts when ports were picked automatically and one was taken before Kafka bound it. */
const PORT_ATTEMPTS = 3

interface Node {
  readonly spec: BrokerSpec
  readonly dir: string
  readonly configFile: string
  readonly log4jFile: string
  readonly logFile: string
  readonly stdoutFile: string
  process: JavaProcess | undefined
  /** Set while this process's exit is expected (stop, kill); an unexpected exit is reported. */
  expectExit: boolean
}

const unstopped = new Set<Cluster>()
let exitHookInstalled = false

/** Starts a real Apache Kafka (KRaft, combined broker+controller nodes) and resolves once every broker is ready. */
export async function startEmbeddedKafka(options: StartEmbeddedKafkaOptions = {}): Promise<EmbeddedKafka> {
  const count = options.brokers ?? 1
  if (count !== 1 && count !== 3) {
    throw new ShoalError(ErrorCodes.USAGE, `brokers must be 1 or 3, not ${String(count)}`)
  }
  const port = options.port ?? 0
  if (!Number.isInteger(port) || port < 0 || port + count - 1 > 65_535) {
    throw new ShoalError(ErrorCodes.USAGE, `port must be a port number (0-65535), not ${port}`)
  }
  const env = options.env ?? process.env
  const progress = options.onProgress ?? (() => {})
  if (port !== 0) {
    for (let i = 0; i < count; i++) await assertPortFree(port + i)
  }
  const java = await checkJava(env)
  const libs = await ensureKafkaJars({
    env,
    onProgress: progress,
    ...(options.signal ? { signal: options.signal } : {})
  })

  const temporary = options.dataDir === undefined
  const dataDir = temporary ? await mkdtemp(join(tmpdir(), 'shoal-kafka-')) : resolve(options.dataDir)
  mkdirSync(dataDir, { recursive: true })
  let lastError: unknown
  for (let attempt = 1; attempt <= (port === 0 ? PORT_ATTEMPTS : 1); attempt++) {
    const cluster = new Cluster({ count, port, dataDir, temporary, java, libs, env, options, progress })
    try {
      await cluster.start()
      return cluster
    } catch (error) {
      lastError = error
      await cluster.abandon()
      if (!isShoalError(error, ErrorCodes.PORT_IN_USE)) break
      progress(`a picked port was taken before Kafka bound it; trying other ports`)
    }
  }
  if (temporary) await rm(dataDir, { recursive: true, force: true })
  // A port taken every time: the last broker's own start error says the most.
  throw isShoalError(lastError, ErrorCodes.PORT_IN_USE) ? lastError.cause : lastError
}

interface ClusterInit {
  readonly count: 1 | 3
  readonly port: number
  readonly dataDir: string
  readonly temporary: boolean
  readonly java: string
  readonly libs: string
  readonly env: NodeJS.ProcessEnv
  readonly options: StartEmbeddedKafkaOptions
  readonly progress: (line: string) => void
}

class Cluster implements EmbeddedKafka {
  readonly version = KAFKA_VERSION
  readonly clusterId: string
  readonly dataDir: string
  readonly #init: ClusterInit
  #nodes: Node[] = []
  #stopping: Promise<void> | undefined

  constructor(init: ClusterInit) {
    this.#init = init
    this.dataDir = init.dataDir
    this.clusterId = clusterIdOf(init.dataDir)
  }

  get bootstrapBrokers(): readonly string[] {
    return this.#nodes.map(n => `${LOOPBACK}:${n.spec.port}`)
  }

  get bootstrap(): string {
    return this.bootstrapBrokers.join(',')
  }

  get mutualTlsBootstrap(): string | undefined {
    if (this.#init.options.saslSsl?.clientCa === undefined) return undefined
    return this.#nodes.map(n => `${LOOPBACK}:${n.spec.saslSsl?.mutualTls?.port ?? 0}`).join(',')
  }

  get saslSslBootstrap(): string | undefined {
    if (this.#init.options.saslSsl === undefined) return undefined
    return this.#nodes.map(n => `${LOOPBACK}:${n.spec.saslSsl?.port ?? 0}`).join(',')
  }

  get brokers(): readonly EmbeddedBrokerInfo[] {
    return this.#nodes.map(n => ({
      nodeId: n.spec.nodeId,
      address: `${LOOPBACK}:${n.spec.port}`,
      port: n.spec.port,
      controllerPort: n.spec.controllerPort,
      extraListenerPort: n.spec.extraListener?.port,
      pid: n.process?.running ? n.process.pid : undefined,
      running: n.process?.running ?? false,
      dir: n.dir,
      logFile: n.logFile
    }))
  }

  async start(): Promise<void> {
    const { count, port, progress } = this.#init
    const extra = this.#init.options.extraListener
    const saslSsl = this.#init.options.saslSsl
    const mutual = saslSsl?.clientCa !== undefined
    const picked = await freePorts(
      (port === 0 ? 2 * count : count) + (extra ? count : 0) + (saslSsl ? count : 0) + (mutual ? count : 0)
    )
    const saslPorts = picked.length - (mutual ? 2 * count : count)
    const specs: BrokerSpec[] = []
    for (let i = 0; i < count; i++) {
      const nodeId = i + 1
      const extraPort = picked[(port === 0 ? 2 * count : count) + i]!
      specs.push({
        nodeId,
        port: port === 0 ? picked[count + i]! : port + i,
        controllerPort: picked[i]!,
        logDir: join(this.dataDir, `broker-${nodeId}`, 'data'),
        ...(extra
          ? { extraListener: { name: extra.name, port: extraPort, advertised: extra.advertised(nodeId) } }
          : {}),
        ...(saslSsl
          ? {
              saslSsl: {
                port: picked[saslPorts + i]!,
                keystoreFile: join(this.dataDir, `broker-${nodeId}`, 'keystore.pem'),
                ...(mutual
                  ? {
                      mutualTls: {
                        port: picked[picked.length - count + i]!,
                        truststoreFile: join(this.dataDir, `broker-${nodeId}`, 'truststore.pem')
                      }
                    }
                  : {})
              }
            }
          : {})
      })
    }
    this.#nodes = specs.map(spec => {
      const dir = join(this.dataDir, `broker-${spec.nodeId}`)
      mkdirSync(dir, { recursive: true })
      const node: Node = {
        spec,
        dir,
        configFile: join(dir, 'server.properties'),
        log4jFile: join(dir, 'log4j2.xml'),
        logFile: join(dir, 'server.log'),
        stdoutFile: join(dir, 'stdout.log'),
        process: undefined,
        expectExit: false
      }
      if (spec.saslSsl !== undefined && saslSsl !== undefined) {
        writeFileSync(spec.saslSsl.keystoreFile, `${saslSsl.privateKey.trim()}\n${saslSsl.certificate.trim()}\n`, {
          mode: 0o600
        })
        const trust = spec.saslSsl.mutualTls
        if (trust !== undefined && saslSsl.clientCa !== undefined) {
          writeFileSync(trust.truststoreFile, `${saslSsl.clientCa.trim()}\n`)
        }
      }
      writeFileSync(node.configFile, serverProperties(spec, specs))
      writeFileSync(node.log4jFile, log4j2Config(node.logFile))
      return node
    })
    installExitHook()
    unstopped.add(this)

    progress(`Kafka ${KAFKA_VERSION}: formatting storage of ${count} broker(s) in ${this.dataDir}`)
    await Promise.all(this.#nodes.map(node => this.#format(node)))
    for (const node of this.#nodes) {
      progress(
        `Kafka ${KAFKA_VERSION}: starting broker ${node.spec.nodeId} on ${LOOPBACK}:${node.spec.port}` +
          ` (controller ${LOOPBACK}:${node.spec.controllerPort}, log ${node.logFile})`
      )
      this.#launch(node)
    }
    await Promise.all(this.#nodes.map(node => this.#waitReady(node, this.#init.options.signal)))
  }

  async #format(node: Node): Promise<void> {
    const { java, libs, env, options } = this.#init
    const result = await runJavaTool({
      java,
      libs,
      env,
      log4jConfigFile: node.log4jFile,
      mainClass: STORAGE_TOOL_CLASS,
      args: [
        'format',
        '--cluster-id',
        this.clusterId,
        '--config',
        node.configFile,
        '--ignore-formatted',
        // SCRAM credentials go into the bootstrap metadata; a broker knows no SCRAM user otherwise.
        ...(options.saslSsl?.users ?? []).flatMap(u => [
          '--add-scram',
          `SCRAM-SHA-512=[name=${u.username},password=${u.password}]`
        ])
      ],
      ...(options.signal ? { signal: options.signal } : {})
    })
    if (result.code !== 0) {
      throw new ShoalError(
        ErrorCodes.KAFKA_START,
        `formatting the storage of Kafka broker ${node.spec.nodeId} failed (exit ${result.code}):\n` +
          result.output.trimEnd().split('\n').slice(-20).join('\n')
      )
    }
  }

  #launch(node: Node): void {
    const { java, libs, env, options } = this.#init
    node.expectExit = false
    const child = launchJava({
      java,
      libs,
      env,
      cwd: node.dir,
      stdoutFile: node.stdoutFile,
      log4jConfigFile: node.log4jFile,
      mainClass: MAIN_CLASS,
      args: [node.configFile]
    })
    node.process = child
    void child.exited.then(exit => {
      if (!node.expectExit && node.process === child) options.onBrokerExit?.(node.spec.nodeId, exit)
    })
  }

  async #waitReady(node: Node, signal: AbortSignal | undefined): Promise<void> {
    const child = node.process
    if (!child) throw new ShoalError(ErrorCodes.INTERNAL, `broker ${node.spec.nodeId} was not launched`)
    const deadline = Date.now() + (this.#init.options.startTimeoutMs ?? 90_000)
    const stopWaiting = new AbortController()
    const onAbort = (): void => stopWaiting.abort(signal?.reason)
    signal?.addEventListener('abort', onAbort, { once: true })
    try {
      const outcome = await Promise.race([
        waitForBroker({
          address: `${LOOPBACK}:${node.spec.port}`,
          expectedBrokers: this.#nodes.length,
          deadline,
          signal: stopWaiting.signal
        }),
        child.exited.then(exit => ({ kind: 'exited' as const, exit }))
      ])
      if (outcome.kind === 'ready') return
      const why =
        outcome.kind === 'exited'
          ? `exited (${outcome.exit.signal ?? `code ${outcome.exit.code}`}) before it was ready`
          : `did not answer a metadata request within ${Math.round((this.#init.options.startTimeoutMs ?? 90_000) / 1000)} s (${outcome.lastError})`
      const tail = [tailFile(node.logFile, 30), tailFile(node.stdoutFile, 10)].filter(Boolean).join('\n')
      // The cause is often well above the tail: a broker that fails logs its whole shutdown after it.
      const wide = [tailFile(node.logFile, 2_000), tailFile(node.stdoutFile, 200)].join('\n')
      const cause = wide.split('\n').find(line => / (ERROR|FATAL) |Exception/.test(line))
      const error = new ShoalError(
        ErrorCodes.KAFKA_START,
        `Kafka broker ${node.spec.nodeId} on ${LOOPBACK}:${node.spec.port} ${why}${cause ? ` (${cause.trim()})` : ''}; the end of ${node.logFile}:\n${tail}`
      )
      // A port taken between picking it and Kafka binding it: the caller picks other ports.
      if (this.#init.port === 0 && /Address already in use|BindException/.test(wide)) {
        throw new ShoalError(ErrorCodes.PORT_IN_USE, error.message, { cause: error, retriable: true })
      }
      throw error
    } finally {
      stopWaiting.abort()
      signal?.removeEventListener('abort', onAbort)
    }
  }

  #node(nodeId: number): Node {
    const node = this.#nodes.find(n => n.spec.nodeId === nodeId)
    if (!node) {
      const ids = this.#nodes.map(n => n.spec.nodeId).join(', ')
      throw new ShoalError(ErrorCodes.USAGE, `no broker ${nodeId} in this cluster (brokers: ${ids})`)
    }
    return node
  }

  async #terminate(node: Node, signal: 'SIGTERM' | 'SIGKILL'): Promise<void> {
    const child = node.process
    if (!child?.running) return
    node.expectExit = true
    child.kill(signal)
    if (signal === 'SIGTERM') {
      const timeout = this.#init.options.stopTimeoutMs ?? 20_000
      let timer: NodeJS.Timeout | undefined
      const timedOut = new Promise<'timeout'>(done => {
        timer = setTimeout(() => done('timeout'), timeout)
      })
      const outcome = await Promise.race([child.exited, timedOut])
      clearTimeout(timer)
      if (outcome !== 'timeout') return
      child.kill('SIGKILL')
    }
    await child.exited
  }

  async killBroker(nodeId: number): Promise<void> {
    await this.#terminate(this.#node(nodeId), 'SIGKILL')
  }

  async stopBroker(nodeId: number): Promise<void> {
    await this.#terminate(this.#node(nodeId), 'SIGTERM')
  }

  async startBroker(nodeId: number, options: { readonly signal?: AbortSignal } = {}): Promise<void> {
    const node = this.#node(nodeId)
    if (this.#stopping) throw new ShoalError(ErrorCodes.USAGE, 'the embedded Kafka is stopped')
    if (node.process?.running) return
    this.#init.progress(`Kafka ${KAFKA_VERSION}: restarting broker ${nodeId} on ${LOOPBACK}:${node.spec.port}`)
    this.#launch(node)
    try {
      await this.#waitReady(node, options.signal)
    } catch (error) {
      await this.#terminate(node, 'SIGKILL')
      throw error
    }
  }

  stop(): Promise<void> {
    this.#stopping ??= this.#stop()
    return this.#stopping
  }

  async #stop(): Promise<void> {
    await Promise.all(this.#nodes.map(node => this.#terminate(node, 'SIGTERM')))
    unstopped.delete(this)
    if (this.#init.temporary) await rm(this.dataDir, { recursive: true, force: true })
  }

  /** After a failed start: kill whatever runs; the data folder is left to the caller. */
  async abandon(): Promise<void> {
    this.#stopping ??= Promise.resolve()
    await Promise.all(this.#nodes.map(node => this.#terminate(node, 'SIGKILL')))
    unstopped.delete(this)
  }

  /** Synchronous last resort when Node.js exits with the cluster still running. */
  killNow(): void {
    for (const node of this.#nodes) {
      node.expectExit = true
      node.process?.kill('SIGKILL')
    }
    if (this.#init.temporary) rmSync(this.dataDir, { recursive: true, force: true, maxRetries: 3 })
  }
}

// The cluster id lives in the data folder, so a kept --data-dir starts again with the id it was formatted with.
function clusterIdOf(dataDir: string): string {
  const file = join(dataDir, 'cluster-id')
  if (existsSync(file)) return readFileSync(file, 'utf8').trim()
  // Kafka's Uuid text form: 16 random bytes, base64url without padding (22 characters). Kafka's own random ids
  // never start with '-', which the storage tool would take for an option.
  let id = randomBytes(16).toString('base64url')
  while (id.startsWith('-')) id = randomBytes(16).toString('base64url')
  writeFileSync(file, `${id}\n`)
  return id
}

function installExitHook(): void {
  if (exitHookInstalled) return
  exitHookInstalled = true
  process.on('exit', () => {
    for (const cluster of unstopped) {
      try {
        cluster.killNow()
      } catch {
        // Exiting anyway; the brokers' own watchdogs still kill them.
      }
    }
  })
}
