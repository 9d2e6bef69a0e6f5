import { parseArgs } from 'node:util'
import { pino } from 'pino'
import { DEFAULT_SERVICE_URL_TEMPLATE } from '../api/index.ts'
import { DELIVERER_DEFAULTS, SinkPolicy, parseCidrList } from '../delivery/index.ts'
import { ErrorCodes, ShoalError, isShoalError } from '../errors/index.ts'
import { parseBootstrap } from '../kafka/index.ts'
import { DEFAULT_MAX_SOURCE_LABELS, DispatcherMetrics, startMetricsServer } from '../metrics/index.ts'
import type { MetricsServer } from '../metrics/index.ts'
import { loadSecretKey } from '../secrets/index.ts'
import type { SecretKey } from '../secrets/index.ts'
import { storeNames } from '../store/index.ts'
import { DEFAULT_SCHEDULE_CAPACITY, DISPATCHER_ID, startDispatcher } from './dispatcher.ts'
import type { DispatcherOptions } from './dispatcher.ts'
import type { DispatcherLog } from './log.ts'
import { notADuration, parseDuration } from '../util/index.ts'
import { dispatcherDefaultsFromEnv } from './env-defaults.ts'
import { startKafkaSourcePlane } from './kafka-source-plane.ts'
import { DEFAULT_RELEASE_MEMORY_AFTER, startPingSourcePlane } from './ping-source-plane.ts'
import { DEFAULT_LATE_POLICY, isLatePolicy } from '../ping/index.ts'
import type { LatePolicy } from '../ping/index.ts'
import { DEFAULT_LIVENESS_TIMEOUT_MS, checkLivenessTimeout } from './liveness.ts'

const usage = `usage: shoal dispatcher --kafka HOST:PORT[,HOST:PORT…] --id dispatcher-N --zone Z --node X --capacity C
                        [--schedule-capacity ${DEFAULT_SCHEDULE_CAPACITY}] [--prefix shoal] [--liveness-timeout ${DEFAULT_LIVENESS_TIMEOUT_MS / 1000}s] [--buckets 16]
                        [--metrics-port N] [--metrics-source-labels ${DEFAULT_MAX_SOURCE_LABELS}] [--ping-late-ticks ${DEFAULT_LATE_POLICY}|last|none]
                        [--max-connections-per-origin ${DELIVERER_DEFAULTS.maxConnectionsPerOrigin}] [--forbidden-sink-cidrs default|CIDR,…]
                        [--release-memory-after ${DEFAULT_RELEASE_MEMORY_AFTER}]   (PingSources loaded before giving memory back; 0 never)
                        [--secret-key-file FILE]   (or SHOAL_SECRET_KEY: opens the Secrets of sources' spec.net)
defaults from the environment: --kafka KAFKA_BOOTSTRAP_SERVERS, --id from POD_NAME or HOSTNAME ending in -N,
--zone SHOAL_ZONE, --node NODE_NAME`

/** A wrong argument: the one line `shoal dispatcher` prints before exiting 2. */
function usageProblem(message: string): ShoalError {
  return new ShoalError(ErrorCodes.USAGE, message)
}

/** What the flags and environment give: the dispatcher's options and where its metrics are served. */
export type DispatcherArgs = Omit<DispatcherOptions, 'log' | 'signal'> & {
  /** Serve /metrics and /healthz on this port (0: a free one); off when absent. */
  readonly metricsPort?: number
  readonly metricsSourceLabels?: number
  /** Requests on the wire per sink origin (the Deliverer's cap); DELIVERER_DEFAULTS when absent. */
  readonly maxConnectionsPerOrigin?: number
  /** `--forbidden-sink-cidrs`: refuse sinks in these ranges when connecting (absent: no sink policy). */
  readonly forbiddenSinkCidrs?: readonly string[]
  /** Missed PingSource ticks a schedule that comes here fires, unless its annotation says (default all). */
  readonly pingLateTicks?: LatePolicy
  /** PingSources read or started before the plane gives the memory back (PingSourcePlaneOptions). */
  readonly releaseMemoryAfter?: number
  /** `--secret-key-file` or SHOAL_SECRET_KEY: opens the Secrets sources' `spec.net` refers to. */
  readonly secretKey?: SecretKey
}

/**
 * `shoal dispatcher`: one data-plane process, until SIGINT or SIGTERM (exit 0, leaving at once), or until a
 * newer process with the same id appears (exit 1).
 */
export async function runDispatcherCommand(argv: readonly string[]): Promise<number> {
  let options: DispatcherArgs | 'help'
  try {
    options = parseDispatcherArgs(argv, process.env)
  } catch (error) {
    if (!isShoalError(error, ErrorCodes.USAGE)) throw error
    process.stderr.write(`shoal dispatcher: ${error.message}\n`)
    return 2
  }
  if (options === 'help') {
    process.stdout.write(`${usage}\n`)
    return 0
  }
  const logger = pino(
    {
      name: 'shoal-dispatcher',
      level: process.env['SHOAL_LOG_LEVEL'] ?? 'info',
      base: { pid: process.pid, id: options.id }
    },
    pino.destination(2)
  )
  const log: DispatcherLog = (level, message, fields) => logger[level](fields ?? {}, message)
  const interrupted = new AbortController()
  const onSignal = () => interrupted.abort()
  process.once('SIGINT', onSignal)
  process.once('SIGTERM', onSignal)
  let server: MetricsServer | undefined
  try {
    const dispatcher = await startDispatcher({ ...options, log, signal: interrupted.signal })
    let metrics: DispatcherMetrics | undefined
    if (options.metricsPort !== undefined) {
      metrics = new DispatcherMetrics({
        dispatcher,
        capacity: { consumer: options.capacity, schedule: options.scheduleCapacity ?? DEFAULT_SCHEDULE_CAPACITY },
        ...(options.metricsSourceLabels === undefined ? {} : { maxSourceLabels: options.metricsSourceLabels }),
        processMetrics: true
      })
      const serving = metrics
      server = await startMetricsServer({ metrics, port: options.metricsPort, health: () => serving.health() }).catch(
        async error => {
          await dispatcher.close()
          throw error
        }
      )
    }
    const plane = await startKafkaSourcePlane(dispatcher, {
      brokers: options.brokers,
      ...(options.prefix === undefined ? {} : { prefix: options.prefix }),
      serviceUrlTemplate: process.env['SHOAL_SERVICE_URL_TEMPLATE'] ?? DEFAULT_SERVICE_URL_TEMPLATE,
      ...(metrics === undefined ? {} : { observer: metrics.observer }),
      ...(options.maxConnectionsPerOrigin === undefined
        ? {}
        : { maxConnectionsPerOrigin: options.maxConnectionsPerOrigin }),
      ...(options.forbiddenSinkCidrs === undefined
        ? {}
        : { sinkPolicy: new SinkPolicy({ forbiddenCidrs: options.forbiddenSinkCidrs }) }),
      ...(options.secretKey === undefined ? {} : { secretKey: options.secretKey }),
      log
    })
    metrics?.track(plane)
    const pings = await startPingSourcePlane(dispatcher, {
      brokers: options.brokers,
      ...(options.prefix === undefined ? {} : { prefix: options.prefix }),
      serviceUrlTemplate: process.env['SHOAL_SERVICE_URL_TEMPLATE'] ?? DEFAULT_SERVICE_URL_TEMPLATE,
      deliverer: plane.deliverer,
      ...(options.pingLateTicks === undefined ? {} : { latePolicy: options.pingLateTicks }),
      ...(options.releaseMemoryAfter === undefined ? {} : { releaseMemoryAfter: options.releaseMemoryAfter }),
      log
    })
    process.stdout.write(
      `Shoal dispatcher ${dispatcher.id} (zone ${dispatcher.zone}, node ${dispatcher.node}) up` +
        `${server === undefined ? '' : `, metrics at ${server.url}/metrics`}\n`
    )
    const signalled = new Promise<'signal'>(resolve => {
      if (interrupted.signal.aborted) resolve('signal')
      interrupted.signal.addEventListener('abort', () => resolve('signal'), { once: true })
    })
    const outcome = await Promise.race([signalled, dispatcher.stopped])
    // Drain and commit, then leave; a shutdown that hangs past its deadline exits anyway (at least once holds:
    // what was not committed is delivered again by the next owner).
    const deadline = setTimeout(() => {
      log('error', 'shutdown did not finish in time; exiting', { deadlineMs: SHUTDOWN_DEADLINE_MS })
      process.exit(1)
    }, SHUTDOWN_DEADLINE_MS)
    deadline.unref()
    process.once('SIGINT', () => process.exit(1))
    process.once('SIGTERM', () => process.exit(1))
    await pings.close()
    await plane.close()
    await dispatcher.close()
    clearTimeout(deadline)
    if (outcome !== 'signal' && outcome.kind === 'superseded') {
      process.stderr.write(
        `shoal dispatcher: another process started as ${dispatcher.id} (incarnation ${outcome.by} > ${outcome.incarnation}); stopped\n`
      )
      return 1
    }
    return 0
  } catch (error) {
    if (interrupted.signal.aborted) return 0
    process.stderr.write(
      `shoal dispatcher: ${isShoalError(error) ? error.message : String((error as Error).message ?? error)}\n`
    )
    return 1
  } finally {
    process.off('SIGINT', onSignal)
    process.off('SIGTERM', onSignal)
    await server?.close()
  }
}

/** How long SIGTERM may take: the data plane's drain (10 s) plus the final commits and the leaving heartbeat. */
const SHUTDOWN_DEADLINE_MS = 20_000

/** The options the flags and environment give, or `help`; throws a SHOAL_USAGE error naming the wrong argument. */
export function parseDispatcherArgs(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>>
): DispatcherArgs | 'help' {
  let values
  try {
    ;({ values } = parseArgs({
      args: [...argv],
      options: {
        kafka: { type: 'string' },
        id: { type: 'string' },
        zone: { type: 'string' },
        node: { type: 'string' },
        capacity: { type: 'string' },
        'schedule-capacity': { type: 'string' },
        prefix: { type: 'string' },
        'liveness-timeout': { type: 'string' },
        buckets: { type: 'string' },
        'metrics-port': { type: 'string' },
        'metrics-source-labels': { type: 'string' },
        'forbidden-sink-cidrs': { type: 'string' },
        'ping-late-ticks': { type: 'string' },
        'max-connections-per-origin': { type: 'string' },
        'release-memory-after': { type: 'string' },
        'secret-key-file': { type: 'string' },
        help: { type: 'boolean', short: 'h' }
      },
      strict: true,
      allowPositionals: false
    }))
  } catch (error) {
    throw usageProblem((error as Error).message)
  }
  if (values.help) return 'help'
  const defaults = dispatcherDefaultsFromEnv(env)
  const kafka = values.kafka ?? env['KAFKA_BOOTSTRAP_SERVERS']
  if (kafka === undefined) throw usageProblem('--kafka is required (or set KAFKA_BOOTSTRAP_SERVERS)')
  let brokers: string[]
  try {
    brokers = parseBootstrap(kafka)
  } catch (error) {
    throw usageProblem(`--kafka: ${(error as Error).message}`)
  }
  const id = values.id ?? defaults.id
  if (id === undefined) throw usageProblem('--id is required (or run in a pod whose name ends in -<ordinal>)')
  if (!DISPATCHER_ID.test(id)) {
    throw usageProblem(`--id "${id}" must be lower-case letters, digits and '-', at most 63, like dispatcher-3`)
  }
  const zone = values.zone ?? defaults.zone
  if (zone === undefined || zone === '') throw usageProblem('--zone is required (or set SHOAL_ZONE)')
  const node = values.node ?? defaults.node
  if (node === undefined || node === '') throw usageProblem('--node is required (or set NODE_NAME)')
  if (values.capacity === undefined) throw usageProblem('--capacity is required: how many consumers it runs at most')
  const capacity = count('--capacity', values.capacity, 0)
  const scheduleCapacity =
    values['schedule-capacity'] === undefined ? undefined : count('--schedule-capacity', values['schedule-capacity'], 0)
  const buckets = values.buckets === undefined ? undefined : count('--buckets', values.buckets, 1)
  if (buckets !== undefined && buckets > 1000) {
    throw usageProblem(`--buckets must be an integer from 1 to 1000, not "${values.buckets}"`)
  }
  const metricsPort =
    values['metrics-port'] === undefined ? undefined : count('--metrics-port', values['metrics-port'], 0)
  if (metricsPort !== undefined && metricsPort > 65535) {
    throw usageProblem(`--metrics-port must be an integer from 0 to 65535, not "${values['metrics-port']}"`)
  }
  const metricsSourceLabels =
    values['metrics-source-labels'] === undefined
      ? undefined
      : count('--metrics-source-labels', values['metrics-source-labels'], 0)
  const maxConnectionsPerOrigin =
    values['max-connections-per-origin'] === undefined
      ? undefined
      : count('--max-connections-per-origin', values['max-connections-per-origin'], 1)
  const releaseMemoryAfter =
    values['release-memory-after'] === undefined
      ? undefined
      : count('--release-memory-after', values['release-memory-after'], 0)
  if (values.prefix !== undefined) {
    try {
      storeNames(values.prefix)
    } catch (error) {
      throw usageProblem(`--prefix: ${(error as Error).message}`)
    }
  }
  const forbiddenSinkCidrs =
    values['forbidden-sink-cidrs'] === undefined ? undefined : parseCidrList(values['forbidden-sink-cidrs'])
  try {
    if (forbiddenSinkCidrs !== undefined) new SinkPolicy({ forbiddenCidrs: forbiddenSinkCidrs })
  } catch (error) {
    throw usageProblem(`--forbidden-sink-cidrs: ${(error as Error).message}`)
  }
  const pingLateTicks = values['ping-late-ticks']
  if (pingLateTicks !== undefined && !isLatePolicy(pingLateTicks)) {
    throw usageProblem(`--ping-late-ticks must be all, last or none, not "${pingLateTicks}"`)
  }
  let secretKey: SecretKey | undefined
  try {
    secretKey = loadSecretKey(values['secret-key-file'], env)
  } catch (error) {
    throw usageProblem((error as Error).message)
  }
  let livenessTimeoutMs: number | undefined
  if (values['liveness-timeout'] !== undefined) {
    livenessTimeoutMs = parseDuration(values['liveness-timeout'])
    if (livenessTimeoutMs === undefined) {
      throw usageProblem(notADuration('--liveness-timeout', values['liveness-timeout']))
    }
    try {
      checkLivenessTimeout(livenessTimeoutMs)
    } catch (error) {
      throw usageProblem(`--liveness-timeout: ${(error as Error).message}`)
    }
  }
  return {
    brokers,
    id,
    zone,
    node,
    capacity,
    ...(scheduleCapacity === undefined ? {} : { scheduleCapacity }),
    ...(values.prefix === undefined ? {} : { prefix: values.prefix }),
    ...(buckets === undefined ? {} : { buckets }),
    ...(livenessTimeoutMs === undefined ? {} : { livenessTimeoutMs }),
    ...(metricsPort === undefined ? {} : { metricsPort }),
    ...(metricsSourceLabels === undefined ? {} : { metricsSourceLabels }),
    ...(maxConnectionsPerOrigin === undefined ? {} : { maxConnectionsPerOrigin }),
    ...(forbiddenSinkCidrs === undefined ? {} : { forbiddenSinkCidrs }),
    ...(pingLateTicks === undefined ? {} : { pingLateTicks }),
    ...(releaseMemoryAfter === undefined ? {} : { releaseMemoryAfter }),
    ...(secretKey === undefined ? {} : { secretKey })
  }
}

function count(flag: string, text: string, min: number): number {
  const value = Number(text)
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(value) || value < min) {
    throw usageProblem(`${flag} must be an integer >= ${min}, not "${text}"`)
  }
  return value
}
