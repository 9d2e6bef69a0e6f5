import type { Server } from 'node:http'
import { parseArgs } from 'node:util'
import { Producer } from '@platformatic/kafka'
import { readFile, readdir } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import { apiVersionOf, kindByApiVersion, parseManifests, validateResource } from '../api/index.ts'
import { createLogger, startController } from '../controller/index.ts'
import type { RunningController } from '../controller/index.ts'
import {
  DEFAULT_SCHEDULE_CAPACITY,
  startDispatcher,
  startKafkaSourcePlane,
  startPingSourcePlane
} from '../dispatcher/index.ts'
import type { KafkaSourcePlane, PingSourcePlane, RunningDispatcher } from '../dispatcher/index.ts'
import { ensureTopics, parseBootstrap, startEmbeddedKafka, KAFKA_VERSION } from '../kafka/index.ts'
import type { EmbeddedKafka } from '../kafka/index.ts'
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

/** `shoal up`: the embedded default, all in one process tree, until Ctrl-C. */
export async function runUp(argv: readonly string[]): Promise<number> {
  let values
  try {
    ;({ values } = parseArgs({
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
    }))
  } catch (error) {
    process.stderr.write(`shoal up: ${(error as Error).message}\n${usage}\n`)
    return 2
  }
  if (values.help) {
    process.stdout.write(`${usage}\n`)
    return 0
  }
  const port = portArg('--port', values.port)
  const kafkaPort = portArg('--kafka-port', values['kafka-port'])
  if (port === undefined || kafkaPort === undefined) return 2
  let pool: UpPool | undefined
  try {
    pool = upPool(values)
  } catch (error) {
    process.stderr.write(`shoal up: ${(error as Error).message}\n`)
    return 2
  }
  const prefix = values.prefix
  const given = values.kafka ?? process.env['KAFKA_BOOTSTRAP_SERVERS']
  const out = (line: string) => process.stdout.write(`${line}\n`)

  const stopping = new AbortController()
  const onSignal = () => stopping.abort()
  process.once('SIGINT', onSignal)
  process.once('SIGTERM', onSignal)
  let kafka: EmbeddedKafka | undefined
  let controller: RunningController | undefined
  const dispatchers: RunningDispatcher[] = []
  const planes: KafkaSourcePlane[] = []
  const pingPlanes: PingSourcePlane[] = []
  let display: { url: string; server: Server } | undefined
  let trickle: { stop(): Promise<void> } | undefined
  let supervisor: PoolSupervisor | undefined
  try {
    let brokers: string[]
    if (given) {
      brokers = parseBootstrap(given)
      out(`Using Kafka at ${brokers.join(',')}`)
    } else {
      out(`Starting the embedded Kafka ${KAFKA_VERSION} …`)
      kafka = await startEmbeddedKafka({
        port: kafkaPort,
        ...(values['data-dir'] === undefined ? {} : { dataDir: values['data-dir'] }),
        onProgress: line => out(`  ${line}`),
        signal: stopping.signal
      })
      brokers = [...kafka.bootstrapBrokers]
    }
    // The event display stands in for every Service a sink names, so the demo's events are seen right here.
    display = await startEventDisplay({ port: 8081, write: text => out(text) }).catch(() =>
      startEventDisplay({ port: 0, write: text => out(text) })
    )
    const serviceUrlTemplate = `${display.url}{namespace}/{name}`
    controller = await startController({
      brokers,
      port,
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
    if (pool !== undefined) {
      const { capacity } = pool
      const poolUrl = `${controller.url}/shoal/v1/pool`
      supervisor = new PoolSupervisor({
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
    }
    for (const [i, zone] of (pool === undefined ? DEMO_ZONES : []).entries()) {
      const dispatcher = await startDispatcher({
        brokers,
        id: `dispatcher-${i}`,
        zone,
        node: `node-${zone}`,
        capacity: DEMO_CAPACITY
      })
      dispatchers.push(dispatcher)
      const plane = await startKafkaSourcePlane(dispatcher, {
        brokers,
        serviceUrlTemplate,
        log: quiet
      })
      planes.push(plane)
      // One Deliverer per dispatcher, shared by both planes.
      pingPlanes.push(
        await startPingSourcePlane(dispatcher, { brokers, serviceUrlTemplate, deliverer: plane.deliverer, log: quiet })
      )
    }
    const applied = values['no-demo'] ? [] : await applyDemo(controller, brokers)
    if (!values['no-demo']) trickle = startTrickle(brokers)
    out('')
    out('Shoal is up.')
    out(
      `  Kafka        ${brokers.join(',')}${kafka ? ` (embedded Kafka ${kafka.version}, data in ${kafka.dataDir})` : ''}`
    )
    out(`  API          ${controller.url}`)
    out(`  dashboard    ${controller.url}/ui   (zones, dispatchers, placements, lag and throughput, live)`)
    out(`  metrics      ${controller.url}/metrics (Prometheus; deploy/grafana/shoal.json is a dashboard for it)`)
    out(`  sink         ${display.url} (event display: every Service a sink names resolves here; events print below)`)
    if (pool === undefined)
      out(
        `  dispatchers  ${dispatchers.map(d => `${d.id} (zone ${d.zone})`).join(', ')}, ${DEMO_CAPACITY} consumer slots each`
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
    out(
      '  shoal cordon dispatcher-2                  # watch its 4 consumers move on the dashboard; uncordon undoes it'
    )
    out(
      `  shoal perf produce --topic shoal-demo --num-records 200000 --record-size 200 --throughput 5000 --bootstrap-server ${brokers.join(',')}`
    )
    out('                                             # load: lag and throughput rise on the dashboard')
    out('Press Ctrl-C to stop.')
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
    await trickle?.stop()
    await supervisor?.stop()
    await Promise.all(pingPlanes.map(p => p.close().catch(() => undefined)))
    await Promise.all(planes.map(p => p.close().catch(() => undefined)))
    await Promise.all(dispatchers.map(d => d.close().catch(() => undefined)))
    await controller?.close().catch(() => undefined)
    await kafka?.stop().catch(() => undefined)
    display?.server.close()
  }
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
