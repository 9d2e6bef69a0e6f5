import { parseArgs } from 'node:util'
import { parseBootstrap } from '../kafka/index.ts'
import { notADuration, parseDuration } from '../util/index.ts'
import { ErrorCodes, ShoalError } from '../errors/index.ts'
import { parsePoolBounds, parsePoolStabilization, parseStatefulSetRef } from '../pool/index.ts'
import { controllerSecurity } from '../auth/index.ts'
import type { ControllerSecurity } from '../auth/index.ts'
import { loadSecretKey } from '../secrets/index.ts'
import { startController } from './controller.ts'
import type { ControllerOptions } from './controller.ts'
import { createLogger } from '../log/index.ts'
import { checkLivenessTimeout } from '../dispatcher/index.ts'

const usage = `usage: shoal controller --kafka HOST:PORT[,HOST:PORT…] [--port 8080] [--host 127.0.0.1]
                        [--prefix shoal] [--buckets 16] [--id NAME] [--service-url-template URL]
                        [--liveness-timeout 10s] [--session-timeout 6s] [--scheduler-config ha|compact|FILE]
                        [--dispatchers MIN..MAX [--pool-stabilization 30s] [--statefulset NS/NAME]]
                        [--tokens FILE] [--forbidden-sink-cidrs CIDR,…]
                        [--tls-cert FILE --tls-key FILE [--tls-ca FILE]]
                        [--secret-key-file FILE]   (or SHOAL_SECRET_KEY: seals Secrets)
                        [--kubernetes [--kubernetes-claim labelled|all]] [--kubeconfig FILE]`

/** `shoal controller`: one control-plane replica, until SIGINT or SIGTERM. */
export async function runControllerCommand(argv: readonly string[]): Promise<number> {
  let parsed: ParsedCommand
  try {
    parsed = parseControllerArgs(argv)
  } catch (error) {
    process.stderr.write(`shoal controller: ${(error as Error).message}\n`)
    return 2
  }
  if (parsed.kind === 'help') {
    process.stdout.write(`${usage}\n`)
    return 0
  }
  try {
    await serveUntilSignalled(parsed.options, parsed.security)
    return 0
  } catch (error) {
    process.stderr.write(
      `shoal controller: ${error instanceof ShoalError ? error.message : String((error as Error).message ?? error)}\n`
    )
    return 1
  }
}

/** The command line read: `--help`, or a controller to run (all but its logger) and how it is secured. */
type ParsedCommand =
  | { readonly kind: 'help' }
  | {
      readonly kind: 'run'
      readonly options: Omit<ControllerOptions, 'logger'>
      readonly security: ControllerSecurity
    }

type Flags = ReturnType<typeof readFlags>

function readFlags(argv: readonly string[]) {
  try {
    return parseArgs({
      args: [...argv],
      options: {
        kafka: { type: 'string' },
        port: { type: 'string', default: '8080' },
        host: { type: 'string', default: '127.0.0.1' },
        prefix: { type: 'string' },
        buckets: { type: 'string' },
        id: { type: 'string' },
        'service-url-template': { type: 'string' },
        'liveness-timeout': { type: 'string' },
        'session-timeout': { type: 'string' },
        dispatchers: { type: 'string' },
        'pool-stabilization': { type: 'string' },
        statefulset: { type: 'string' },
        'scheduler-config': { type: 'string' },
        tokens: { type: 'string' },
        'forbidden-sink-cidrs': { type: 'string' },
        'tls-cert': { type: 'string' },
        'tls-key': { type: 'string' },
        'tls-ca': { type: 'string' },
        'secret-key-file': { type: 'string' },
        kubernetes: { type: 'boolean' },
        kubeconfig: { type: 'string' },
        'kubernetes-claim': { type: 'string' },
        help: { type: 'boolean', short: 'h' }
      },
      strict: true,
      allowPositionals: false
    }).values
  } catch (error) {
    throw usageError(`${(error as Error).message}\n${usage}`, error)
  }
}

/** Reads and checks every flag, in the order a user reads the usage; the first problem is a usage error. */
function parseControllerArgs(argv: readonly string[]): ParsedCommand {
  const values = readFlags(argv)
  if (values.help) return { kind: 'help' }
  const kafka = values.kafka ?? process.env['KAFKA_BOOTSTRAP_SERVERS']
  if (!kafka) throw usageError(`--kafka is required (or set KAFKA_BOOTSTRAP_SERVERS)\n${usage}`)
  let brokers: string[]
  try {
    brokers = parseBootstrap(kafka)
  } catch (error) {
    throw usageError(`--kafka: ${(error as Error).message}`, error)
  }
  const port = Number(values.port)
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw usageError(`--port must be a port number, not "${values.port}"`)
  }
  const buckets = values.buckets === undefined ? undefined : Number(values.buckets)
  if (buckets !== undefined && (!Number.isInteger(buckets) || buckets < 1 || buckets > 1000)) {
    throw usageError(`--buckets must be an integer from 1 to 1000, not "${values.buckets}"`)
  }
  const { livenessTimeoutMs, sessionTimeoutMs } = timeoutsOf(values)
  const pool = poolOptions(values)
  if (values.statefulset !== undefined && pool === undefined) {
    throw new ShoalError(ErrorCodes.USAGE, '--statefulset needs --dispatchers MIN..MAX')
  }
  const statefulSet = values.statefulset === undefined ? undefined : parseStatefulSetRef(values.statefulset)
  const kubernetes = kubernetesOptions(values)
  const security = controllerSecurity(values, values.prefix)
  const secretKey = loadSecretKey(values['secret-key-file'])
  const options: Omit<ControllerOptions, 'logger'> = {
    ...(security.tls === undefined ? {} : { tls: security.tls }),
    guard: security.guard,
    ...(secretKey === undefined ? {} : { secretKey }),
    brokers,
    port,
    host: values.host,
    ...(values.prefix === undefined ? {} : { prefix: values.prefix }),
    ...(buckets === undefined ? {} : { buckets }),
    ...(values.id === undefined ? {} : { replicaId: values.id }),
    ...(livenessTimeoutMs === undefined ? {} : { livenessTimeoutMs }),
    ...(sessionTimeoutMs === undefined ? {} : { sessionTimeoutMs }),
    ...(pool === undefined ? {} : { pool }),
    ...(statefulSet === undefined ? {} : { statefulSet }),
    ...(kubernetes === undefined ? {} : { kubernetes }),
    ...(values.kubeconfig === undefined ? {} : { kubeconfig: values.kubeconfig }),
    ...(values['scheduler-config'] === undefined ? {} : { schedulerConfig: values['scheduler-config'] }),
    ...(values['service-url-template'] === undefined ? {} : { serviceUrlTemplate: values['service-url-template'] })
  }
  return { kind: 'run', options, security }
}

/** `--liveness-timeout` and `--session-timeout`, when given. */
function timeoutsOf(values: Flags): { livenessTimeoutMs?: number; sessionTimeoutMs?: number } {
  let livenessTimeoutMs: number | undefined
  if (values['liveness-timeout'] !== undefined) {
    livenessTimeoutMs = parseDuration(values['liveness-timeout'])
    if (livenessTimeoutMs === undefined)
      throw usageError(notADuration('--liveness-timeout', values['liveness-timeout']))
    // The range the dispatchers hold to: the controller declares them dead after it, so both must agree.
    try {
      checkLivenessTimeout(livenessTimeoutMs)
    } catch (error) {
      throw usageError(`--liveness-timeout: ${(error as Error).message}`)
    }
  }
  let sessionTimeoutMs: number | undefined
  if (values['session-timeout'] !== undefined) {
    sessionTimeoutMs = parseDuration(values['session-timeout'])
    if (
      sessionTimeoutMs === undefined ||
      sessionTimeoutMs < MIN_SESSION_TIMEOUT_MS ||
      sessionTimeoutMs > MAX_SESSION_TIMEOUT_MS
    ) {
      throw usageError(
        `--session-timeout must be a duration from 2s to 30m (at least twice the 1 s group heartbeat), not "${values['session-timeout']}"`
      )
    }
  }
  return {
    ...(livenessTimeoutMs === undefined ? {} : { livenessTimeoutMs }),
    ...(sessionTimeoutMs === undefined ? {} : { sessionTimeoutMs })
  }
}

/** Runs the controller until SIGINT or SIGTERM, then closes it. */
async function serveUntilSignalled(
  options: Omit<ControllerOptions, 'logger'>,
  security: ControllerSecurity
): Promise<void> {
  const controller = await startController({ ...options, logger: createLogger('shoal-controller') })
  security.ownEndpoints(() => [controller.url, ...controller.store.controllers().map(c => c.url)])
  process.stdout.write(`Shoal controller ${controller.replicaId} serving the API on ${controller.url}\n`)
  process.stdout.write(`${security.mode}\n`)
  await new Promise<void>(resolve => {
    process.once('SIGINT', resolve)
    process.once('SIGTERM', resolve)
  })
  // A second signal, or a shutdown that hangs, exits at once: the log holds everything a restart needs.
  const deadline = setTimeout(() => process.exit(1), 15_000)
  deadline.unref()
  process.once('SIGINT', () => process.exit(1))
  process.once('SIGTERM', () => process.exit(1))
  await controller.close()
  clearTimeout(deadline)
}

function usageError(message: string, cause?: unknown): ShoalError {
  return new ShoalError(ErrorCodes.USAGE, message, cause === undefined ? {} : { cause })
}

/** `--session-timeout` bounds: twice the group heartbeat (1 s), and a stock broker's group.max.session.timeout.ms. */
const MIN_SESSION_TIMEOUT_MS = 2_000
const MAX_SESSION_TIMEOUT_MS = 30 * 60_000

/** `--kubernetes` with `--kubeconfig` and `--kubernetes-claim`: operator mode, or none. */
function kubernetesOptions(values: Flags): ControllerOptions['kubernetes'] {
  if (!values.kubernetes) {
    if (values['kubernetes-claim'] !== undefined) throw usageError('--kubernetes-claim needs --kubernetes')
    if (values.kubeconfig !== undefined && values.statefulset === undefined) {
      throw usageError('--kubeconfig needs --kubernetes or --statefulset')
    }
    return undefined
  }
  const claim = values['kubernetes-claim'] ?? 'labelled'
  if (claim !== 'labelled' && claim !== 'all') {
    throw usageError(`--kubernetes-claim must be "labelled" or "all", not "${claim}"`)
  }
  return { claim }
}

/** `--dispatchers MIN..MAX` and `--pool-stabilization`: the pool the leader sizes, or none. */
function poolOptions(values: {
  readonly dispatchers?: string | undefined
  readonly 'pool-stabilization'?: string | undefined
}): ControllerOptions['pool'] {
  if (values.dispatchers === undefined) {
    if (values['pool-stabilization'] !== undefined)
      throw new ShoalError(ErrorCodes.USAGE, '--pool-stabilization needs --dispatchers MIN..MAX')
    return undefined
  }
  const bounds = parsePoolBounds(values.dispatchers)
  const text = values['pool-stabilization']
  if (text === undefined) return { bounds }
  return { bounds, stabilizationMs: parsePoolStabilization(text) }
}
