// Drill: SIGKILL a dispatcher mid-stream. Its vreplicas move to the survivors; what it had fetched but not
// committed is delivered again by the next owner (duplicates), nothing is lost. Two variants on one harness:
//
// - Knative's orderings: an `unordered` and an `ordered` source, and three PingSources firing every second beside
//   them; the victim is the dispatcher that runs the PingSources (it holds one of the stream's vreplicas too), so
//   their schedules fail over with it: no second may be missing, and the seconds fired twice are printed.
// - Shoal's delivery modes (issue 16): an `ordering: key` source, a batched one (`ordered`, batches of up to 50
//   events or 20 ms) and one with both (`key` in batches), records with five keys; the victim holds a vreplica of
//   the keyed source. Besides lost 0, the sink checks each mode's order as test/helpers/lane-order.ts states it:
//   per key of a partition (key, key in batches), per partition across batches (batched) — a record only once
//   every earlier one of its lane was answered, going back only as a redelivery.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { ensureTopics } from '../../src/kafka/index.ts'
import { startControllerProcess } from '../helpers/controllers.ts'
import type { ControllerProcess } from '../helpers/controllers.ts'
import { http } from '../helpers/http.ts'
import { brokers, uniqueName } from '../helpers/kafka.ts'
import { eventually } from '../helpers/wait.ts'
import { startDispatcherProcess } from '../helpers/dispatchers.ts'
import type { DispatcherProcess } from '../helpers/dispatchers.ts'
import { TickSink, createEverySecondSources, pingPlacements, readyTimes } from '../helpers/ticks.ts'
import {
  CountingSink,
  IdProducer,
  KS,
  LIVENESS,
  PINGS,
  assertPings,
  createSource,
  reportEach,
  reportPings,
  settle,
  waitReady
} from './harness.ts'
import type { SourceSpec } from './harness.ts'

const PARTITIONS = 12
const RECORDS = 3_000

/** One variant of the drill: its name in the figures, its sources, and what it checks beyond lost 0. */
interface Variant {
  readonly drill: string
  readonly title: string
  /** The sources (each on the drill's topic, three vreplicas, its own sink path); the victim holds the first's. */
  readonly sources: ReadonlyArray<Omit<SourceSpec, 'topic' | 'sink' | 'consumers'>>
  /** Three PingSources beside them, the victim their dispatcher. */
  readonly pings: boolean
  /** Records carry one of this many keys (else their id). */
  readonly keys?: number
  /** Per source, the order its sink must see: per partition, or per key of a partition. */
  readonly order?: Readonly<Record<string, 'partition' | 'key'>>
}

const VARIANTS: readonly Variant[] = [
  {
    drill: 'dispatcher-kill',
    title: 'moves its vreplicas to the survivors and loses nothing',
    // Knative's default ordering beside the stream, on the same topic (a group of its own).
    sources: [{ name: 'stream' }, { name: 'ordered', ordering: 'ordered' }],
    pings: true,
    order: { ordered: 'partition' }
  },
  {
    drill: 'dispatcher-kill-modes',
    title: 'ordering: key and batches: loses nothing, each keeps its order but for redelivery',
    sources: [
      { name: 'keyed', ordering: 'key' },
      {
        name: 'batched',
        ordering: 'ordered',
        annotations: { 'delivery.shoal.dev/batch-max-events': '50', 'delivery.shoal.dev/batch-max-wait': 'PT0.02S' }
      },
      {
        name: 'keyed-batches',
        ordering: 'key',
        annotations: { 'delivery.shoal.dev/batch-max-events': '50', 'delivery.shoal.dev/batch-max-wait': 'PT0.02S' }
      }
    ],
    pings: false,
    keys: 5,
    order: { keyed: 'key', batched: 'partition', 'keyed-batches': 'key' }
  }
]

describe('drill: a dispatcher SIGKILLed mid-stream', () => {
  for (const variant of VARIANTS) {
    it(variant.title, async () => {
      await killDrill(variant)
    })
  }
})

async function killDrill(variant: Variant): Promise<void> {
  const prefix = uniqueName(`drill-${variant.drill}`)
  const topic = `${prefix}-topic`
  await ensureTopics({ brokers: brokers(), clientId: 'drill' }, [{ name: topic, partitions: PARTITIONS, configs: {} }])
  const sink = await new CountingSink().start()
  const pingSink = await new TickSink().start()
  const producer = new IdProducer(variant.drill, topic, PARTITIONS, undefined, {
    ...(variant.keys === undefined ? {} : { keys: variant.keys })
  })
  const names = variant.sources.map(s => s.name)
  const first = names[0]!
  let controller: ControllerProcess | undefined
  const dispatchers: DispatcherProcess[] = []
  try {
    controller = await startControllerProcess(prefix, LIVENESS)
    for (const [i, zone] of ['a', 'b', 'c'].entries()) {
      dispatchers.push(await startDispatcherProcess(prefix, `dispatcher-${i}`, zone, `${zone}-1`, 10, LIVENESS))
    }
    for (const source of variant.sources) {
      await createSource(controller.url, { ...source, topic, sink: sink.url(source.name), consumers: 3 })
    }
    if (variant.pings) await createEverySecondSources(controller.url, PINGS, pingSink)
    await waitReady(controller.url, names)
    const pingsReady = variant.pings ? await readyTimes(controller.url, PINGS) : new Map<string, number>()

    const streaming = producer.stream(RECORDS, 100, 100)
    await eventually(async () => (sink.ids(first).size >= 600 ? true : undefined), 120_000, 'the stream flowing')
    const placements = (await http('GET', `${controller.url}${KS}/${first}`)).body.status.placements as Array<{
      podName: string
    }>
    // The PingSources' dispatcher when it holds a vreplica of the stream (it does when the three are spread).
    const pingsOn = variant.pings ? await pingPlacements(controller.url) : new Map<string, string>()
    const pingHost = pingsOn.get(PINGS[0])
    const victimId = placements.some(p => p.podName === pingHost) ? pingHost : placements[0]?.podName
    const victim = dispatchers.find(d => d.id === victimId)
    assert.ok(victim, `a dispatcher with a placement (${JSON.stringify(placements)})`)
    const pingsOnVictim = PINGS.filter(n => pingsOn.get(n) === victim.id).length
    if (variant.pings) assert.ok(pingsOnVictim > 0, `a PingSource on ${victim.id} (${JSON.stringify([...pingsOn])})`)
    const killedAt = Date.now()
    await victim.stop('SIGKILL')
    await streaming

    // The killed dispatcher's vreplicas are placed on the survivors.
    await eventually(
      async () => {
        for (const name of names) {
          const now = (await http('GET', `${controller!.url}${KS}/${name}`)).body.status.placements as Array<{
            podName: string
            vreplicas: number
          }>
          const placed = now.reduce((n, p) => n + p.vreplicas, 0)
          if (placed !== 3 || now.some(p => p.podName === victim.id)) return undefined
        }
        return true
      },
      120_000,
      `the vreplicas of ${victim.id} placed on the survivors`
    )
    const sources = names.map(name => ({ name, sink }))
    await settle(variant.drill, producer.produced, sources)
    const pingsStop = Date.now()
    const kafka = reportEach(variant.drill, producer.produced, sources, { killed: victim.id })
    const pings = variant.pings
      ? await reportPings(
          variant.drill,
          pingSink,
          pingsReady,
          pingsStop,
          { killed: victim.id, pingsOnKilled: pingsOnVictim },
          { SIGKILL: killedAt }
        )
      : undefined
    for (const figures of kafka) {
      assert.equal(figures.produced, RECORDS)
      assert.equal(figures.lost, 0, `${figures.drill}: lost ${figures.lostIds.slice(0, 20).join(' ')}`)
    }
    for (const [name, lanes] of Object.entries(variant.order ?? {})) {
      const order = sink.orders.get(name)![lanes].check()
      const restarts = [...order.restarts.values()].reduce((n, r) => n + r, 0)
      console.log(
        `# drill ${variant.drill} ${name}: order per ${lanes} over ${order.lanes} lanes, ${order.violations.length} violations, went back ${restarts} times (redelivery)`
      )
      assert.deepEqual(order.violations.slice(0, 10), [], `${name}: ${order.violations.length} order violations`)
    }
    if (pings !== undefined) assertPings(variant.drill, pings)
  } finally {
    await producer.close()
    await controller?.stop()
    await Promise.all(dispatchers.map(d => d.stop()))
    await sink.close()
    await pingSink.close()
  }
}
