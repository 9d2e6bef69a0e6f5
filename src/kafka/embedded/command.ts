import { parseArgs } from 'node:util'
import { isShoalError } from '../../errors/index.ts'
import { startEmbeddedKafka } from './cluster.ts'
import type { EmbeddedKafka } from './embedded-kafka.ts'
import { KAFKA_VERSION } from './version.ts'

const USAGE = `usage: shoal kafka start [--brokers 1|3] [--port N] [--data-dir DIR]

Runs a real Apache Kafka ${KAFKA_VERSION} (KRaft) on 127.0.0.1 until Ctrl-C.
  --brokers 1|3     one broker (default), or three for replication 3 and failover
  --port N          the first broker's port (default 9092; the others take N+1, N+2; 0 picks free ports)
  --data-dir DIR    keep the data in DIR (default: a temporary folder removed on stop)
`

/** The parsed `shoal kafka start` arguments, or the one line saying what is wrong. */
export type KafkaStartArgs =
  | { readonly kind: 'start'; readonly brokers: 1 | 3; readonly port: number; readonly dataDir: string | undefined }
  | { readonly kind: 'help' }
  | { readonly kind: 'invalid'; readonly message: string }

/** Parses `shoal kafka …` arguments (pure). */
export function parseKafkaArgs(argv: readonly string[]): KafkaStartArgs {
  const [subcommand, ...rest] = argv
  if (subcommand === undefined || subcommand === '--help' || subcommand === '-h' || subcommand === 'help') {
    return { kind: 'help' }
  }
  if (subcommand !== 'start') return { kind: 'invalid', message: `unknown subcommand ${subcommand} (expected: start)` }
  let values
  try {
    ;({ values } = parseArgs({
      args: [...rest],
      options: {
        brokers: { type: 'string' },
        port: { type: 'string' },
        'data-dir': { type: 'string' },
        help: { type: 'boolean', short: 'h' }
      },
      strict: true,
      allowPositionals: false
    }))
  } catch (error) {
    return { kind: 'invalid', message: describeParseError(error) }
  }
  if (values.help) return { kind: 'help' }
  const brokers = values.brokers ?? '1'
  if (brokers !== '1' && brokers !== '3')
    return { kind: 'invalid', message: `--brokers must be 1 or 3, not ${brokers}` }
  const portText = values.port ?? '9092'
  const port = /^\d{1,5}$/.test(portText) ? Number(portText) : NaN
  if (!(port >= 0 && port <= 65_535)) {
    return { kind: 'invalid', message: `--port must be a port number (0-65535), not ${portText}` }
  }
  const dataDir = values['data-dir']
  if (dataDir === '') return { kind: 'invalid', message: '--data-dir must not be empty' }
  return { kind: 'start', brokers: brokers === '3' ? 3 : 1, port, dataDir }
}

// node:util's messages run long and suggest `--`; keep the part that names the argument.
function describeParseError(error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code
  const message = (error as Error).message
  const named = /'([^']+)'/.exec(message)?.[1]
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' && named) return `unknown option ${named}`
  if (code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL' && named) return `unexpected argument ${named}`
  if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' && named) {
    return `option ${named.replace(/ <value>$/, '').replace(/^-\w, /, '')} needs a value`
  }
  return message.split('\n')[0] ?? message
}

/** `shoal kafka start …`: runs the embedded Kafka until SIGINT/SIGTERM; returns the exit code. */
export async function runKafkaCommand(argv: readonly string[]): Promise<number> {
  const args = parseKafkaArgs(argv)
  if (args.kind === 'help') {
    process.stdout.write(USAGE)
    return 0
  }
  if (args.kind === 'invalid') {
    process.stderr.write(`shoal kafka: ${args.message}\n`)
    return 2
  }

  const interrupted = new AbortController()
  let crashed: (() => void) | undefined
  const brokerCrashed = new Promise<number>(resolve => {
    crashed = () => resolve(1)
  })
  const onSignal = (): void => interrupted.abort()
  process.once('SIGINT', onSignal)
  process.once('SIGTERM', onSignal)
  let kafka: EmbeddedKafka | undefined
  try {
    kafka = await startEmbeddedKafka({
      brokers: args.brokers,
      port: args.port,
      ...(args.dataDir === undefined ? {} : { dataDir: args.dataDir }),
      signal: interrupted.signal,
      onProgress: line => process.stderr.write(`${line}\n`),
      onBrokerExit: (nodeId, exit) => {
        process.stderr.write(
          `shoal: Kafka broker ${nodeId} exited unexpectedly (${exit.signal ?? `code ${exit.code}`}); stopping\n`
        )
        crashed?.()
      }
    })
    process.stdout.write(`Kafka ${KAFKA_VERSION} ready on ${kafka.bootstrap}\n`)
    const stopped = new Promise<number>(resolve => {
      interrupted.signal.addEventListener('abort', () => resolve(0), { once: true })
    })
    const code = await Promise.race([stopped, brokerCrashed])
    process.stderr.write(`Kafka ${KAFKA_VERSION}: stopping\n`)
    await kafka.stop()
    return code
  } catch (error) {
    if (interrupted.signal.aborted) return 130
    if (isShoalError(error)) {
      process.stderr.write(`shoal: ${error.message}\n`)
      return 1
    }
    throw error
  } finally {
    process.off('SIGINT', onSignal)
    process.off('SIGTERM', onSignal)
    await kafka?.stop()
  }
}
