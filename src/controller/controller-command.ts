import { parseArgs } from 'node:util'
import { parseBootstrap } from '../kafka/index.ts'
import { notADuration, parseDuration } from '../util/index.ts'
import { ErrorCodes, ShoalError } from '../errors/index.ts'
import { parsePoolBounds, parsePoolStabilization, parseStatefulSetRef } from '../pool/index.ts'
import { controllerSecurity } from '../auth/index.ts'
import type { ControllerSecurity } from '../auth/index.ts'
import { loadSecretKey } from '../secrets/index.ts'
import type { SecretKey } from '../secrets/index.ts'
import { startController } from './controller.ts'
import type { ControllerOptions } from './controller.ts'
import { createLogger } from './logger.ts'

const usage = `usage: shoal controller --kafka HOST:PORT[,HOST:PORT…] [--port 8080] [--host 127.0.0.1]
                        [--prefix shoal] [--buckets 16] [--id NAME] [--service-url-template URL]
                        [--liveness-timeout 10s] [--session-timeout 6s] [--scheduler-config ha|compact|FILE]
                        [--dispatchers MIN..MAX [--pool-stabilization 30s] [--statefulset NS/NAME]]
                        [--tokens FILE] [--forbidden-sink-cidrs CIDR,…]
                        [--tls-cert FILE --tls-key FILE [--tls-ca FILE]]
                        [--secret-key-file FILE]   (or SHOAL_SECRET_KEY: seals Secrets)`

/** `shoal controller`: one control-plane replica, until SIGINT or SIGTERM. */
export async function runControllerCommand(argv: readonly string[]): Promise<number> {
  let values
  try {
    ;({ values } = parseArgs({
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
        help: { type: 'boolean', short: 'h' }
      },
      strict: true,
      allowPositionals: false
    }))
  } catch (error) {
    process.stderr.write(`shoal controller: ${(error as Error).message}\n${usage}\n`)
    return 2
  }
  if (values.help) {
    process.stdout.write(`${usage}\n`)
    return 0
  }
  const kafka = values.kafka ?? process.env['KAFKA_BOOTSTRAP_SERVERS']
  if (!kafka) {
    process.stderr.write(`shoal controller: --kafka is required (or set KAFKA_BOOTSTRAP_SERVERS)\n${usage}\n`)
    return 2
  }
  let brokers: string[]
  try {
    brokers = parseBootstrap(kafka)
  } catch (error) {
    process.stderr.write(`shoal controller: --kafka: ${(error as Error).message}\n`)
    return 2
  }
  const port = Number(values.port)
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    process.stderr.write(`shoal controller: --port must be a port number, not "${values.port}"\n`)
    return 2
  }
  const buckets = values.buckets === undefined ? undefined : Number(values.buckets)
  if (buckets !== undefined && (!Number.isInteger(buckets) || buckets < 1 || buckets > 1000)) {
    process.stderr.write(`shoal controller: --buckets must be an integer from 1 to 1000, not "${values.buckets}"\n`)
    return 2
  }
  let livenessTimeoutMs: number | undefined
  if (values['liveness-timeout'] !== undefined) {
    livenessTimeoutMs = parseDuration(values['liveness-timeout'])
    if (livenessTimeoutMs === undefined) {
      process.stderr.write(`shoal controller: ${notADuration('--liveness-timeout', values['liveness-timeout'])}\n`)
      return 2
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
      process.stderr.write(
        `shoal controller: --session-timeout must be a duration from 2s to 30m (at least twice the 1 s group heartbeat), not "${values['session-timeout']}"\n`
      )
      return 2
    }
  }
  let pool: ControllerOptions['pool']
  let statefulSet: ControllerOptions['statefulSet']
  try {
    pool = poolOptions(values)
    if (values.statefulset !== undefined) {
      if (pool === undefined) throw new ShoalError(ErrorCodes.USAGE, '--statefulset needs --dispatchers MIN..MAX')
      statefulSet = parseStatefulSetRef(values.statefulset)
    }
  } catch (error) {
    process.stderr.write(`shoal controller: ${(error as Error).message}\n`)
    return 2
  }
  let security: ControllerSecurity
  try {
    security = controllerSecurity(values, values.prefix)
  } catch (error) {
    process.stderr.write(`shoal controller: ${(error as Error).message}\n`)
    return 2
  }
  let secretKey: SecretKey | undefined
  try {
    secretKey = loadSecretKey(values['secret-key-file'])
  } catch (error) {
    process.stderr.write(`shoal controller: ${(error as Error).message}\n`)
    return 2
  }
  const logger = createLogger('shoal-controller')
  try {
    const controller = await startController({
      ...(security.tls === undefined ? {} : { tls: security.tls }),
      guard: security.guard,
      ...(secretKey === undefined ? {} : { secretKey }),
      brokers,
      port,
      host: values.host,
      logger,
      ...(values.prefix === undefined ? {} : { prefix: values.prefix }),
      ...(buckets === undefined ? {} : { buckets }),
      ...(values.id === undefined ? {} : { replicaId: values.id }),
      ...(livenessTimeoutMs === undefined ? {} : { livenessTimeoutMs }),
      ...(sessionTimeoutMs === undefined ? {} : { sessionTimeoutMs }),
      ...(pool === undefined ? {} : { pool }),
      ...(statefulSet === undefined ? {} : { statefulSet }),
      ...(values['scheduler-config'] === undefined ? {} : { schedulerConfig: values['scheduler-config'] }),
      ...(values['service-url-template'] === undefined ? {} : { serviceUrlTemplate: values['service-url-template'] })
    })
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
    return 0
  } catch (error) {
    process.stderr.write(
      `shoal controller: ${error instanceof ShoalError ? error.message : String((error as Error).message ?? error)}\n`
    )
    return 1
  }
}

/** `--session-timeout` bounds: twice the group heartbeat (1 s), and a stock broker's group.max.session.timeout.ms. */
const MIN_SESSION_TIMEOUT_MS = 2_000
const MAX_SESSION_TIMEOUT_MS = 30 * 60_000

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
