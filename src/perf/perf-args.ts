import { parseArgs } from 'node:util'
import type { ParseArgsOptionsConfig } from 'node:util'
import { ErrorCodes, ShoalError } from '../errors/index.ts'
import { parseBootstrap } from '../kafka/index.ts'
import type { E2ePerfOptions } from './e2e.ts'
import type { Acks, ProducePerfOptions } from './produce.ts'

export const PERF_USAGE = `usage: shoal perf produce|consume|e2e [flags]   (brokers: --bootstrap-server or KAFKA_BOOTSTRAP_SERVERS)

  shoal perf produce --topic T --num-records N --record-size B --throughput R|-1 [--acks all|1|0]
                     [--producer-props batch.size=16384 linger.ms=5 max.in.flight.requests.per.connection=5]
      kafka-producer-perf-test's figures: records/sec, MB/sec, avg and max latency, 50th/95th/99th/99.9th
  shoal perf consume --topic T --num-records N [--group G] [--from-latest] [--timeout MS]
                     [--show-detailed-stats] [--reporting-interval MS] [--hide-header]
      kafka-consumer-perf-test's figures: MB, MB/sec, records, records/sec, rebalance and fetch time
  shoal perf e2e [--num-records 10000] [--record-size 100] [--throughput 1000|-1] [--consumers 3]
                 [--partitions 6] [--acks all|1|0] [--timeout MS]
      produce → a KafkaSource on a dispatcher → a sink in this process: end-to-end latency percentiles

A progress bar on a terminal; plain lines otherwise.
`

/** `shoal perf produce`: the run's settings as producePerf takes them. */
export type ProduceArgs = { readonly kind: 'produce' } & Pick<
  ProducePerfOptions,
  'brokers' | 'topic' | 'numRecords' | 'recordSize' | 'throughput' | 'acks' | 'batchBytes' | 'lingerMs' | 'maxInFlight'
>

export interface ConsumeArgs {
  readonly kind: 'consume'
  readonly brokers: readonly string[]
  readonly topic: string
  readonly numRecords: number
  readonly group?: string
  readonly fromLatest: boolean
  readonly timeoutMs: number
  readonly showDetailedStats: boolean
  readonly reportingIntervalMs: number
  readonly hideHeader: boolean
}

/** `shoal perf e2e`: the run's settings as e2ePerf takes them (its timeout always set). */
export type E2eArgs = { readonly kind: 'e2e' } & Pick<
  E2ePerfOptions,
  'brokers' | 'numRecords' | 'recordSize' | 'throughput' | 'acks' | 'consumers' | 'partitions'
> & { readonly timeoutMs: number }

export type PerfArgs = ProduceArgs | ConsumeArgs | E2eArgs | { readonly kind: 'help' }

type Subcommand = 'produce' | 'consume' | 'e2e'
type FlagValues = Record<string, string | boolean | string[] | undefined>

/** Every flag of every subcommand, as node:util reads them. */
const PERF_FLAGS = {
  'bootstrap-server': { type: 'string' },
  topic: { type: 'string' },
  'num-records': { type: 'string' },
  'record-size': { type: 'string' },
  throughput: { type: 'string' },
  acks: { type: 'string' },
  'producer-props': { type: 'string', multiple: true },
  group: { type: 'string' },
  'from-latest': { type: 'boolean' },
  timeout: { type: 'string' },
  'show-detailed-stats': { type: 'boolean' },
  'reporting-interval': { type: 'string' },
  'hide-header': { type: 'boolean' },
  consumers: { type: 'string' },
  partitions: { type: 'string' },
  help: { type: 'boolean', short: 'h' }
} satisfies ParseArgsOptionsConfig

/** The flags each subcommand takes. */
const ALLOWED: Record<Subcommand, readonly string[]> = {
  produce: ['bootstrap-server', 'topic', 'num-records', 'record-size', 'throughput', 'acks', 'producer-props'],
  consume: [
    'bootstrap-server',
    'topic',
    'num-records',
    'group',
    'from-latest',
    'timeout',
    'show-detailed-stats',
    'reporting-interval',
    'hide-header'
  ],
  e2e: ['bootstrap-server', 'num-records', 'record-size', 'throughput', 'acks', 'consumers', 'partitions', 'timeout']
}

/** Parses `shoal perf …` (pure but for the environment given); throws SHOAL_USAGE naming the bad argument. */
export function parsePerfArgs(argv: readonly string[], env: Readonly<Record<string, string | undefined>>): PerfArgs {
  const [sub, ...rest] = argv
  if (sub === undefined || sub === 'help' || sub === '--help' || sub === '-h') return { kind: 'help' }
  if (sub !== 'produce' && sub !== 'consume' && sub !== 'e2e')
    throw usage(`unknown subcommand "${sub}" (expected produce, consume or e2e)`)
  let values: FlagValues
  try {
    ;({ values } = parseArgs({
      args: joinNegativeValues(rest),
      options: PERF_FLAGS,
      strict: true,
      allowPositionals: true
    }))
  } catch (error) {
    throw usage((error as Error).message.split('\n')[0] ?? String(error))
  }
  if (values['help'] === true) return { kind: 'help' }
  for (const name of Object.keys(values)) {
    if (!ALLOWED[sub].includes(name)) throw usage(`--${name} is not a flag of shoal perf ${sub}`)
  }
  const str = (name: string) => values[name] as string | undefined
  const server = str('bootstrap-server') ?? env['KAFKA_BOOTSTRAP_SERVERS']
  if (server === undefined || server.trim() === '')
    throw usage('--bootstrap-server: required (or set KAFKA_BOOTSTRAP_SERVERS)')
  let brokers: readonly string[]
  try {
    brokers = parseBootstrap(server)
  } catch (error) {
    throw usage(`--bootstrap-server: ${(error as Error).message}`)
  }
  const acks = parseAcks(str('acks') ?? 'all')
  if (sub === 'produce') return produceArgs(values, brokers, acks)
  if (sub === 'consume') return consumeArgs(values, brokers)
  return e2eArgs(values, brokers, acks)
}

function produceArgs(values: FlagValues, brokers: readonly string[], acks: Acks): ProduceArgs {
  const str = (name: string) => values[name] as string | undefined
  const props = parseProducerProps((values['producer-props'] as string[] | undefined) ?? [])
  return {
    kind: 'produce',
    brokers,
    topic: required(str('topic'), '--topic'),
    numRecords: integer(required(str('num-records'), '--num-records'), '--num-records', 1),
    recordSize: integer(required(str('record-size'), '--record-size'), '--record-size', 1),
    throughput: throughput(required(str('throughput'), '--throughput')),
    acks: props.acks ?? acks,
    ...(props.batchBytes === undefined ? {} : { batchBytes: props.batchBytes }),
    ...(props.lingerMs === undefined ? {} : { lingerMs: props.lingerMs }),
    ...(props.maxInFlight === undefined ? {} : { maxInFlight: props.maxInFlight })
  }
}

function consumeArgs(values: FlagValues, brokers: readonly string[]): ConsumeArgs {
  const str = (name: string) => values[name] as string | undefined
  const group = str('group')
  return {
    kind: 'consume',
    brokers,
    topic: required(str('topic'), '--topic'),
    numRecords: integer(required(str('num-records'), '--num-records'), '--num-records', 1),
    ...(group === undefined ? {} : { group }),
    fromLatest: values['from-latest'] === true,
    timeoutMs: integer(str('timeout') ?? '10000', '--timeout', 1),
    showDetailedStats: values['show-detailed-stats'] === true,
    reportingIntervalMs: integer(str('reporting-interval') ?? '5000', '--reporting-interval', 1),
    hideHeader: values['hide-header'] === true
  }
}

function e2eArgs(values: FlagValues, brokers: readonly string[], acks: Acks): E2eArgs {
  const str = (name: string) => values[name] as string | undefined
  const consumers = integer(str('consumers') ?? '3', '--consumers', 1)
  const partitions = integer(str('partitions') ?? String(Math.max(6, consumers)), '--partitions', 1)
  if (partitions < consumers)
    throw usage(
      `--partitions (${partitions}) must be at least --consumers (${consumers}): a consumer needs a partition`
    )
  return {
    kind: 'e2e',
    brokers,
    numRecords: integer(str('num-records') ?? '10000', '--num-records', 1),
    recordSize: integer(str('record-size') ?? '100', '--record-size', 24),
    throughput: throughput(str('throughput') ?? '1000'),
    acks,
    consumers,
    partitions,
    timeoutMs: integer(str('timeout') ?? '30000', '--timeout', 1)
  }
}

/** `--throughput -1` as Kafka's tools take it: node:util would read `-1` as a flag, so it is joined with `=`. */
function joinNegativeValues(args: readonly string[]): string[] {
  const out: string[] = []
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!
    const next = args[i + 1]
    if (arg.startsWith('--') && !arg.includes('=') && next !== undefined && /^-\d/.test(next)) {
      out.push(`${arg}=${next}`)
      i++
    } else out.push(arg)
  }
  return out
}

function usage(message: string): ShoalError {
  return new ShoalError(ErrorCodes.USAGE, message)
}

function required(value: string | undefined, flag: string): string {
  if (value === undefined || value === '') throw usage(`${flag}: required`)
  return value
}

function integer(text: string, flag: string, min: number): number {
  const n = /^-?\d+$/.test(text) ? Number(text) : NaN
  if (!Number.isSafeInteger(n) || n < min)
    throw usage(`${flag}: must be a whole number of at least ${min}, not "${text}"`)
  return n
}

function throughput(text: string): number {
  const n = Number(text)
  if (text === '-1' || (text.trim() !== '' && Number.isFinite(n) && n > 0)) return n
  throw usage(`--throughput: records per second (a number above 0), or -1 for no limit; not "${text}"`)
}

function parseAcks(text: string): Acks {
  if (text === 'all' || text === '-1') return -1
  if (text === '1') return 1
  if (text === '0') return 0
  throw usage(`--acks: all, -1, 1 or 0; not "${text}"`)
}

/** The producer settings that change what `shoal perf produce` does; other Kafka producer properties are refused. */
function parseProducerProps(props: readonly string[]): {
  acks?: Acks
  batchBytes?: number
  lingerMs?: number
  maxInFlight?: number
} {
  const out: { acks?: Acks; batchBytes?: number; lingerMs?: number; maxInFlight?: number } = {}
  for (const prop of props.flatMap(p => p.split(/\s+/)).filter(p => p !== '')) {
    const eq = prop.indexOf('=')
    if (eq <= 0) throw usage(`--producer-props: "${prop}" is not name=value`)
    const name = prop.slice(0, eq)
    const value = prop.slice(eq + 1)
    if (name === 'acks') out.acks = parseAcks(value)
    else if (name === 'batch.size') out.batchBytes = integer(value, '--producer-props batch.size', 1)
    else if (name === 'linger.ms') out.lingerMs = integer(value, '--producer-props linger.ms', 0)
    else if (name === 'max.in.flight.requests.per.connection')
      out.maxInFlight = integer(value, '--producer-props max.in.flight.requests.per.connection', 1)
    else if (name !== 'bootstrap.servers' && name !== 'client.id')
      throw usage(
        `--producer-props: ${name} is not supported (supported: acks, batch.size, linger.ms, max.in.flight.requests.per.connection)`
      )
  }
  return out
}
