import type { Server } from 'node:http'
import { parseArgs } from 'node:util'
import { Producer } from '@platformatic/kafka'
import { readFile, readdir } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import { apiVersionOf, kindByApiVersion, parseManifests, validateResource } from '../api/index.ts'
import { startController } from '../controller/index.ts'
import { createLogger } from '../log/index.ts'
import type { RunningController } from '../controller/index.ts'
import { DEFAULT_SCHEDULE_CAPACITY, startWiredDispatcher } from '../dispatcher/index.ts'
import type { WiredDispatcher } from '../dispatcher/index.ts'
import { ensureTopics, parseBootstrap } from '../kafka/index.ts'
import { KAFKA_VERSION, startEmbeddedKafka } from '../kafka/embedded/index.ts'
import type { EmbeddedKafka } from '../kafka/embedded/index.ts'
import { PoolSupervisor, parsePoolBounds, parsePoolStabilization, parseZones, spawnDispatcher } from '../pool/index.ts'
import type { PoolBounds, PoolDecision } from '../pool/index.ts'
import { startEventDisplay } from './sink.ts'

const usage = `usage: shoal up [--kafka HOST:PORT] [--port 8080] [--kafka-port 9092] [--data-dir DIR] [--no-demo] [--prefix shoal]
                [--dispatchers MIN..MAX [--zones a,b,c] [--dispatcher-capacity 10] [--pool-stabilization 30s]]

Starts Shoal on this machine: an embedded Kafka (unless --kafka or KAFKA_BOOTSTRAP_SERVERS names one),
a controller serving the API, and the demo sources in examples/. Ctrl-C stops everything.
Without --dispatchers, three dispatchers run in this process (zones a, b, c). With it, an elastic pool of
dispatcher processes: more start while vreplicas wait for capacity, the highest stop once emptied (docs/pool.md).`

/** What the in-process dispatchers say: warnings and errors only, on stderr. */
const quiet = (level: 'info' | 'warn' | 'error', message: string, fields?: Readonly<Record<string, unknown>>) => {
  if (level !== 'info')
    process.stderr.write(`dispatcher ${level}: ${message} ${fields ? JSON.stringify(fields) : ''}\n`)
}

/** The demo pool: one dispatcher in each of three zones. */
const DEMO_ZONES = ['a', 'b', 'c'] as const
const DEMO_CAPACITY = 10
/** The demo KafkaSource's consumers: 4 in each zone, on a topic with a partition for each. */
const DEMO_CONSUMERS = 12

const examplesDir = fileURLToPath(new URL('../../examples/', import.meta.url))

type UpFlags = ReturnType<typeof parseUpFlags>

function parseUpFlags(argv: readonly string[]) {
  return parseArgs({
    args: [...argv],
    options: {
      kafka: { type: 'string' },
      port: { type: 'string', default: '8080' },
      'kafka-port': { type: 'string', default: '9092' },
      'data-dir': { type: 'string' },
      'no-demo': { type: 'boolean', default: false },
      prefix: { type: 'string' },
      dispatchers: { type: 'string' },
      zones: { type: 'string' },
      'dispatcher-capacity': { type: 'string' },
      'pool-stabilization': { type: 'string' },
      help: { type: 'boolean', short: 'h' }
    },
    strict: true,
    allowPositionals: false
  }).values
}

/** What `shoal up` runs, from its flags. */
interface UpOptions {
  readonly flags: UpFlags
  readonly port: number
  readonly kafkaPort: number
  readonly pool: UpPool | undefined
}

/** The options, or the exit code when the flags say to stop here (help, or a wrong flag). */
function upOptionsOf(argv: readonly string[]): UpOptions | number {
  let flags: UpFlags
  try {
    flags = parseUpFlags(argv)
  } catch (error) {
    process.stderr.write(`shoal up: ${(error as Error).message}\n${usage}\n`)
    return 2
  }
  if (flags.help) {
    process.stdout.write(`${usage}\n`)
    return 0
  }
  const port = portArg('--port', flags.port)
  const kafkaPort = portArg('--kafka-port', flags['kafka-port'])
  if (port === undefined || kafkaPort === undefined) return 2
  try {
    return { flags, port, kafkaPort, pool: upPool(flags) }
  } catch (error) {
    process.stderr.write(`shoal up: ${(error as Error).message}\n`)
    return 2
  }
}

/** What runs while `shoal up` is up; stopped in reverse. */
interface UpStack {
  kafka?: EmbeddedKafka
  brokers: readonly string[]
  controller?: RunningController
  dispatchers: WiredDispatcher[]
  display?: { url: string; server: Server }
  trickle?: { stop(): Promise<void> }
  supervisor?: PoolSupervisor
}

const out = (line: string) => process.stdout.write(`${line}\n`)

/** `shoal up`: the embedded default, all in one process tree, until Ctrl-C. */
export async function runUp(argv: readonly string[]): Promise<number> {
  const options = upOptionsOf(argv)
  if (typeof options === 'number') return options
  const stopping = new AbortController()
  const onSignal = () => stopping.abort()
  process.once('SIGINT', onSignal)
  process.once('SIGTERM', onSignal)
  const stack: UpStack = { brokers: [], dispatchers: [] }
  try {
    const started = await startStack(stack, options, stopping.signal)
    const applied = options.flags['no-demo'] ? [] : await applyDemo(started.controller, stack.brokers)
    if (!options.flags['no-demo']) stack.trickle = startTrickle(stack.brokers)
    printUp(stack, started, options.pool, applied)
    if (!stopping.signal.aborted)
      await new Promise(resolve => stopping.signal.addEventListener('abort', resolve, { once: true }))
    out('Stopping …')
    return 0
  } catch (error) {
    if (stopping.signal.aborted) return 130
    process.stderr.write(`shoal up: ${(error as Error).message}\n`)
    return 1
  } finally {
    process.off('SIGINT', onSignal)
    process.off('SIGTERM', onSignal)
    await stack.trickle?.stop()
    await stack.supervisor?.stop()
    await Promise.all(stack.dispatchers.map(d => d.close().catch(() => undefined)))
    await stack.controller?.close().catch(() => undefined)
    await stack.kafka?.stop().catch(() => undefined)
    stack.display?.server.close()
  }
}

/** Kafka, the event display, the controller, and the dispatchers: in process, or a pool of processes. */
async function startStack(stack: UpStack, options: UpOptions, signal: AbortSignal): Promise<Started> {
  const { flags, pool } = options
  const prefix = flags.prefix
  const given = flags.kafka ?? process.env['KAFKA_BOOTSTRAP_SERVERS']
  if (given) {
    stack.brokers = parseBootstrap(given)
    out(`Using Kafka at ${stack.brokers.join(',')}`)
  } else {
    out(`Starting the embedded Kafka ${KAFKA_VERSION} …`)
    stack.kafka = await startEmbeddedKafka({
      port: options.kafkaPort,
      ...(flags['data-dir'] === undefined ? {} : { dataDir: flags['data-dir'] }),
      onProgress: line => out(`  ${line}`),
      signal
    })
    stack.brokers = [...stack.kafka.bootstrapBrokers]
  }
  const brokers = stack.brokers
  // The event display stands in for every Service a sink names, so the demo's events are seen right here.
  const display = await startEventDisplay({ port: 8081, write: text => out(text) }).catch(() =>
    startEventDisplay({ port: 0, write: text => out(text) })
  )
  stack.display = display
  const serviceUrlTemplate = `${display.url}{namespace}/{name}`
  const controller = await startController({
    brokers,
    port: options.port,
    serviceUrlTemplate,
    logger: createLogger('shoal-controller', process.env['SHOAL_LOG_LEVEL'] ?? 'warn'),
    ...(prefix === undefined ? {} : { prefix }),
    ...(pool === undefined
      ? {}
      : {
          pool: {
            bounds: pool.bounds,
            capacity: { consumer: pool.capacity, schedule: DEFAULT_SCHEDULE_CAPACITY },
            ...(pool.stabilizationMs === undefined ? {} : { stabilizationMs: pool.stabilizationMs })
          }
        })
  })
  stack.controller = controller
  if (pool !== undefined) {
    stack.supervisor = startPool(pool, controller, brokers, prefix, serviceUrlTemplate)
    return { controller, displayUrl: display.url }
  }
  for (const [i, zone] of DEMO_ZONES.entries()) {
    stack.dispatchers.push(
      await startWiredDispatcher({
        dispatcher: {
          brokers,
          id: `dispatcher-${i}`,
          zone,
          node: `node-${zone}`,
          capacity: DEMO_CAPACITY,
          ...(prefix === undefined ? {} : { prefix })
        },
        planes: { serviceUrlTemplate, log: quiet }
      })
    )
  }
  return { controller, displayUrl: display.url }
}

/** What the banner and the demo need of a started stack. */
interface Started {
  readonly controller: RunningController
  readonly displayUrl: string
}

/** An elastic pool of `shoal dispatcher` processes, sized by the controller's pool decision. */
function startPool(
  pool: UpPool,
  controller: RunningController,
  brokers: readonly string[],
  prefix: string | undefined,
  serviceUrlTemplate: string
): PoolSupervisor {
  const { capacity } = pool
  const poolUrl = `${controller.url}/shoal/v1/pool`
  const supervisor = new PoolSupervisor({
    bounds: pool.bounds,
    zones: pool.zones,
    decision: async () => {
      const response = await fetch(poolUrl, { signal: AbortSignal.timeout(5_000) })
      if (!response.ok) throw new Error(`${poolUrl}: ${response.status}`)
      return (await response.json()) as PoolDecision
    },
    start: (id, _ordinal, zone) =>
      spawnDispatcher({
        brokers,
        id,
        zone,
        node: `node-${zone}`,
        capacity,
        ...(prefix === undefined ? {} : { prefix }),
        env: { SHOAL_SERVICE_URL_TEMPLATE: serviceUrlTemplate },
        onStderr: text => process.stderr.write(text)
      }),
    log: line => out(`pool: ${line}`)
  })
  supervisor.start()
  return supervisor
}

/** What is up, where, and what to try next. */
function printUp(stack: UpStack, started: Started, pool: UpPool | undefined, applied: readonly string[]): void {
  const { kafka, brokers } = stack
  const { controller } = started
  out('')
  out('Shoal is up.')
  out(
    `  Kafka        ${brokers.join(',')}${kafka ? ` (embedded Kafka ${kafka.version}, data in ${kafka.dataDir})` : ''}`
  )
  out(`  API          ${controller.url}`)
  out(`  dashboard    ${controller.url}/ui   (zones, dispatchers, placements, lag and throughput, live)`)
  out(`  metrics      ${controller.url}/metrics (Prometheus; deploy/grafana/shoal.json is a dashboard for it)`)
  out(
    `  sink         ${started.displayUrl} (event display: every Service a sink names resolves here; events print below)`
  )
  if (pool === undefined)
    out(
      `  dispatchers  ${stack.dispatchers.map(({ dispatcher: d }) => `${d.id} (zone ${d.zone})`).join(', ')}, ${DEMO_CAPACITY} consumer slots each`
    )
  else
    out(
      `  dispatchers  a pool of ${pool.bounds.min}..${pool.bounds.max} processes over zones ${pool.zones.join(',')}, ${pool.capacity} consumer slots each (${controller.url}/shoal/v1/pool says why)`
    )
  for (const line of applied) out(`  demo         ${line}`)
  out('')
  out('Next, in another terminal:')
  out(`  export SHOAL_SERVER=${controller.url}`)
  out('  shoal get kafkasources,pingsources -A      # what runs, and whether it is Ready')
  out('  shoal get dispatchers                      # the pool: zones, capacity, load')
  out('  shoal apply -f examples/ping-source.yaml   # create or change a source')
  out('  shoal describe kafkasource demo            # its spec, status and conditions')
  out('  shoal cordon dispatcher-2                  # watch its 4 consumers move on the dashboard; uncordon undoes it')
  out(
    `  shoal perf produce --topic shoal-demo --num-records 200000 --record-size 200 --throughput 5000 --bootstrap-server ${brokers.join(',')}`
  )
  out('                                             # load: lag and throughput rise on the dashboard')
  out('Press Ctrl-C to stop.')
}

/** A producer that puts a small JSON order on the demo topic every two seconds, for the demo source to deliver. */
function startTrickle(brokers: readonly string[]): { stop(): Promise<void> } {
  const producer = new Producer({ clientId: 'shoal-up-demo', bootstrapBrokers: [...brokers], idempotent: true })
  let n = 0
  const timer = setInterval(() => {
    n++
    const value = Buffer.from(
      JSON.stringify({ order: n, item: ['kelp', 'coral', 'sponge'][n % 3], at: new Date().toISOString() })
    )
    producer
      .send({
        acks: -1,
        messages: [
          {
            topic: 'shoal-demo',
            key: Buffer.from(`order-${n}`),
            value,
            headers: new Map([[Buffer.from('content-type'), Buffer.from('application/json')]])
          }
        ]
      })
      .catch(() => undefined)
  }, 2_000)
  return {
    async stop() {
      clearInterval(timer)
      await producer.close().catch(() => undefined)
    }
  }
}

/** Creates the demo topic and applies examples/*.yaml, pointing their Kafka addresses at this cluster. */
async function applyDemo(controller: RunningController, brokers: readonly string[]): Promise<string[]> {
  await ensureTopics({ brokers, clientId: 'shoal-up' }, [
    { name: 'shoal-demo', partitions: DEMO_CONSUMERS, configs: {} }
  ])
  const lines: string[] = []
  const files = (await readdir(examplesDir)).filter(f => /\.ya?ml$/.test(f)).sort()
  for (const file of files) {
    const text = (await readFile(`${examplesDir}${file}`, 'utf8')).replaceAll('127.0.0.1:9092', brokers.join(','))
    for (const document of parseManifests(text)) {
      const resource = validateResource(document)
      // The demo's KafkaSource runs 12 consumers, so the scheduler's spread shows: 4 in each zone.
      const scaled = resource.kind === 'KafkaSource' && resource.metadata.name === 'demo'
      if (scaled) (document as { spec: { consumers?: number } }).spec.consumers = DEMO_CONSUMERS
      const info = kindByApiVersion(resource.apiVersion, resource.kind)!
      const path = `/apis/${info.group}/${info.version}/namespaces/${resource.metadata.namespace}/${info.plural}`
      const response = await fetch(`${controller.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(document)
      })
      const verb =
        response.status === 201 ? 'created' : response.status === 409 ? 'exists' : `refused (${response.status})`
      lines.push(
        `${info.singular}.${info.group}/${resource.metadata.name} ${verb} (${apiVersionOf(info)}, examples/${file}${scaled ? `, ${DEMO_CONSUMERS} consumers` : ''})`
      )
    }
  }
  return lines
}

interface UpPool {
  readonly bounds: PoolBounds
  readonly zones: readonly string[]
  readonly capacity: number
  readonly stabilizationMs?: number
}

/** `--dispatchers MIN..MAX` and its companions; undefined without it (the in-process demo pool). */
function upPool(values: {
  readonly dispatchers?: string | undefined
  readonly zones?: string | undefined
  readonly 'dispatcher-capacity'?: string | undefined
  readonly 'pool-stabilization'?: string | undefined
}): UpPool | undefined {
  if (values.dispatchers === undefined) {
    const stray = (['zones', 'dispatcher-capacity', 'pool-stabilization'] as const).find(f => values[f] !== undefined)
    if (stray !== undefined) throw new Error(`--${stray} needs --dispatchers MIN..MAX`)
    return undefined
  }
  const bounds = parsePoolBounds(values.dispatchers)
  const zones = parseZones(values.zones ?? DEMO_ZONES.join(','))
  const capacityText = values['dispatcher-capacity'] ?? String(DEMO_CAPACITY)
  const capacity = Number(capacityText)
  if (!Number.isInteger(capacity) || capacity < 1 || capacity > 100_000)
    throw new Error(`--dispatcher-capacity must be a whole number from 1 to 100000, not "${capacityText}"`)
  const text = values['pool-stabilization']
  if (text === undefined) return { bounds, zones, capacity }
  return { bounds, zones, capacity, stabilizationMs: parsePoolStabilization(text) }
}

function portArg(name: string, value: string): number | undefined {
  const port = Number(value)
  if (Number.isInteger(port) && port >= 0 && port <= 65535) return port
  process.stderr.write(`shoal up: ${name} must be a port number, not "${value}"\n`)
  return undefined
}
