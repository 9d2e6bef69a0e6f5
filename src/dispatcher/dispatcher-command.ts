import { parseArgs } from 'node:util'
import { pino } from 'pino'
import { DEFAULT_SERVICE_URL_TEMPLATE } from '../api/index.ts'
import { DELIVERER_DEFAULTS, SinkPolicy, parseCidrList } from '../delivery/index.ts'
import { ErrorCodes, ShoalError, isShoalError } from '../errors/index.ts'
import { parseBootstrap } from '../kafka/index.ts'
import { DEFAULT_MAX_SOURCE_LABELS, startMetricsServer } from '../metrics/index.ts'
import type { MetricsServer } from '../metrics/index.ts'
import { DEFAULT_LATE_POLICY, DEFAULT_RELEASE_MEMORY_AFTER, isLatePolicy } from '../ping-source/index.ts'
import type { LatePolicy } from '../ping-source/index.ts'
import { loadSecretKey } from '../secrets/index.ts'
import type { SecretKey } from '../secrets/index.ts'
import { storeNames } from '../store/index.ts'
import { notADuration, parseDuration } from '../util/index.ts'
import { DEFAULT_SCHEDULE_CAPACITY, DISPATCHER_ID } from './dispatcher-options.ts'
import type { DispatcherOptions } from './dispatcher-options.ts'
import type { DispatcherStop } from './dispatcher.ts'
import { startWiredDispatcher } from './dispatcher-wiring.ts'
import type { DispatcherWiring, WiredDispatcher } from './dispatcher-wiring.ts'
import { dispatcherDefaultsFromEnv } from './env-defaults.ts'
import { DEFAULT_LIVENESS_TIMEOUT_MS, checkLivenessTimeout } from './liveness.ts'
import type { Log } from '../log/index.ts'

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
  const log: Log = (level, message, fields) => logger[level](fields ?? {}, message)
  const interrupted = new AbortController()
  const onSignal = () => interrupted.abort()
  process.once('SIGINT', onSignal)
  process.once('SIGTERM', onSignal)
  try {
    return await serve(options, log, interrupted.signal)
  } catch (error) {
    if (interrupted.signal.aborted) return 0
    process.stderr.write(
      `shoal dispatcher: ${isShoalError(error) ? error.message : String((error as Error).message ?? error)}\n`
    )
    return 1
  } finally {
    process.off('SIGINT', onSignal)
    process.off('SIGTERM', onSignal)
  }
}

/** What the command runs, from its flags: the dispatcher, its planes, and its metrics when a port is given. */
function dispatcherWiringOf(
  options: DispatcherArgs,
  log: Log,
  env: Readonly<Record<string, string | undefined>>,
  signal?: AbortSignal
): DispatcherWiring {
  const {
    metricsPort,
    metricsSourceLabels,
    maxConnectionsPerOrigin,
    forbiddenSinkCidrs,
    pingLateTicks,
    releaseMemoryAfter,
    secretKey,
    ...dispatcher
  } = options
  return {
    dispatcher: { ...dispatcher, log, ...(signal === undefined ? {} : { signal }) },
    planes: {
      serviceUrlTemplate: env['SHOAL_SERVICE_URL_TEMPLATE'] ?? DEFAULT_SERVICE_URL_TEMPLATE,
      log,
      ...(maxConnectionsPerOrigin === undefined ? {} : { maxConnectionsPerOrigin }),
      ...(forbiddenSinkCidrs === undefined
        ? {}
        : { sinkPolicy: new SinkPolicy({ forbiddenCidrs: forbiddenSinkCidrs }) }),
      ...(secretKey === undefined ? {} : { kafkaSource: { secretKey } }),
      pingSource: {
        ...(pingLateTicks === undefined ? {} : { latePolicy: pingLateTicks }),
        ...(releaseMemoryAfter === undefined ? {} : { releaseMemoryAfter })
      }
    },
    ...(metricsPort === undefined
      ? {}
      : {
          metrics: {
            processMetrics: true,
            ...(metricsSourceLabels === undefined ? {} : { maxSourceLabels: metricsSourceLabels })
          }
        })
  }
}

/** Runs the dispatcher until signalled or superseded, then drains and stops it; the exit code. */
async function serve(options: DispatcherArgs, log: Log, signal: AbortSignal): Promise<number> {
  const wired = await startWiredDispatcher(dispatcherWiringOf(options, log, process.env, signal))
  const { dispatcher, metrics } = wired
  let server: MetricsServer | undefined
  try {
    if (metrics !== undefined && options.metricsPort !== undefined) {
      server = await startMetricsServer({ metrics, port: options.metricsPort, health: () => metrics.health() })
    }
  } catch (error) {
    await wired.close()
    throw error
  }
  try {
    process.stdout.write(
      `Shoal dispatcher ${dispatcher.id} (zone ${dispatcher.zone}, node ${dispatcher.node}) up` +
        `${server === undefined ? '' : `, metrics at ${server.url}/metrics`}\n`
    )
    const signalled = new Promise<'signal'>(resolve => {
      if (signal.aborted) resolve('signal')
      signal.addEventListener('abort', () => resolve('signal'), { once: true })
    })
    const outcome = await Promise.race([signalled, dispatcher.stopped])
    await shutDown(wired, log)
    return exitCodeOf(outcome, dispatcher.id)
  } finally {
    await server?.close()
  }
}

/**
 * Drains and commits, then leaves; a shutdown that hangs past its deadline exits anyway (at least once holds:
 * what was not committed is delivered again by the next owner).
 */
async function shutDown(wired: WiredDispatcher, log: Log): Promise<void> {
  const deadline = setTimeout(() => {
    log('error', 'shutdown did not finish in time; exiting', { deadlineMs: SHUTDOWN_DEADLINE_MS })
    process.exit(1)
  }, SHUTDOWN_DEADLINE_MS)
  deadline.unref()
  process.once('SIGINT', () => process.exit(1))
  process.once('SIGTERM', () => process.exit(1))
  await wired.close()
  clearTimeout(deadline)
}

function exitCodeOf(outcome: 'signal' | DispatcherStop, id: string): number {
  if (outcome === 'signal' || outcome.kind !== 'superseded') return 0
  process.stderr.write(
    `shoal dispatcher: another process started as ${id} (incarnation ${outcome.by} > ${outcome.incarnation}); stopped\n`
  )
  return 1
}

/** How long SIGTERM may take: the data plane's drain (10 s) plus the final commits and the leaving heartbeat. */
const SHUTDOWN_DEADLINE_MS = 20_000

const FLAGS = {
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
} as const

type Flags = ReturnType<typeof parseArgs<{ options: typeof FLAGS; strict: true; allowPositionals: false }>>['values']
type Env = Readonly<Record<string, string | undefined>>

/** The options the flags and environment give, or `help`; throws a SHOAL_USAGE error naming the wrong argument. */
export function parseDispatcherArgs(argv: readonly string[], env: Env): DispatcherArgs | 'help' {
  let values: Flags
  try {
    ;({ values } = parseArgs({ args: [...argv], options: FLAGS, strict: true, allowPositionals: false }))
  } catch (error) {
    throw usageProblem((error as Error).message)
  }
  if (values.help) return 'help'
  // In this order, so the first wrong argument is the one named.
  return { ...identityOf(values, env), ...countsOf(values), ...policiesOf(values, env) }
}

/** Where it connects and who it is: --kafka, --id, --zone, --node. */
function identityOf(values: Flags, env: Env): Pick<DispatcherArgs, 'brokers' | 'id' | 'zone' | 'node'> {
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
  return { brokers, id, zone, node }
}

/** The whole-number flags: slots, buckets, the metrics port and labels, connections, memory release. */
function countsOf(values: Flags) {
  if (values.capacity === undefined) throw usageProblem('--capacity is required: how many consumers it runs at most')
  const capacity = count('--capacity', values.capacity, 0)
  const optional = (flag: keyof Flags, min: number, max = Number.MAX_SAFE_INTEGER) => {
    const text = values[flag]
    if (typeof text !== 'string') return undefined
    const value = count(`--${flag}`, text, min)
    if (value > max) throw usageProblem(`--${flag} must be an integer from ${min} to ${max}, not "${text}"`)
    return value
  }
  const scheduleCapacity = optional('schedule-capacity', 0)
  const buckets = optional('buckets', 1, 1000)
  const metricsPort = optional('metrics-port', 0, 65535)
  const metricsSourceLabels = optional('metrics-source-labels', 0)
  const maxConnectionsPerOrigin = optional('max-connections-per-origin', 1)
  const releaseMemoryAfter = optional('release-memory-after', 0)
  return {
    capacity,
    ...(scheduleCapacity === undefined ? {} : { scheduleCapacity }),
    ...(buckets === undefined ? {} : { buckets }),
    ...(metricsPort === undefined ? {} : { metricsPort }),
    ...(metricsSourceLabels === undefined ? {} : { metricsSourceLabels }),
    ...(maxConnectionsPerOrigin === undefined ? {} : { maxConnectionsPerOrigin }),
    ...(releaseMemoryAfter === undefined ? {} : { releaseMemoryAfter })
  }
}

/** The flags checked by what they configure: --prefix, sinks, late ticks, the secret key, the liveness timeout. */
function policiesOf(values: Flags, env: Env) {
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
  const livenessTimeoutMs = livenessOf(values['liveness-timeout'])
  return {
    ...(values.prefix === undefined ? {} : { prefix: values.prefix }),
    ...(livenessTimeoutMs === undefined ? {} : { livenessTimeoutMs }),
    ...(forbiddenSinkCidrs === undefined ? {} : { forbiddenSinkCidrs }),
    ...(pingLateTicks === undefined ? {} : { pingLateTicks }),
    ...(secretKey === undefined ? {} : { secretKey })
  }
}

function livenessOf(text: string | undefined): number | undefined {
  if (text === undefined) return undefined
  const livenessTimeoutMs = parseDuration(text)
  if (livenessTimeoutMs === undefined) throw usageProblem(notADuration('--liveness-timeout', text))
  try {
    checkLivenessTimeout(livenessTimeoutMs)
  } catch (error) {
    throw usageProblem(`--liveness-timeout: ${(error as Error).message}`)
  }
  return livenessTimeoutMs
}

function count(flag: string, text: string, min: number): number {
  const value = Number(text)
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(value) || value < min) {
    throw usageProblem(`${flag} must be an integer >= ${min}, not "${text}"`)
  }
  return value
}
