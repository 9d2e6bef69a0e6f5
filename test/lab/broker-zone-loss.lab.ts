// Drill: a whole zone lost while records stream — the zone that holds the leaders of the busy partitions (the
// drill topic is made with every partition's leader there). Every host of the zone is cut from every other host
// (its broker, controller and dispatchers go dark at once, as a zone's power or network going). With replication
// 3, min.insync.replicas 2 and acks=all, the producer must go on once Kafka has moved the leaders to the other
// zones, no acknowledged record may be lost, and Shoal's store must keep answering reads and writes from the
// controllers left. The partitions' leaders, replicas and ISR are printed as kafka-topics --describe prints them,
// before the loss, during it and after the heal (when every replica is back in sync).
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { Admin, FindCoordinatorKeyTypes } from '@platformatic/kafka'
import { bucketOf, storeNames } from '../../src/store/index.ts'
import { http } from '../helpers/http.ts'
import { brokers, uniqueName } from '../helpers/kafka.ts'
import { eventually } from '../helpers/wait.ts'
import { PS, TickSink, createEverySecondSources, everySecondManifest, readyTimes } from '../helpers/ticks.ts'
import {
  CountingSink,
  IdProducer,
  PINGS,
  assertPings,
  createSource,
  durability,
  reportEach,
  reportPings,
  settle,
  waitReady
} from '../faults/harness.ts'
import { NetworkFaults } from './faults.ts'
import { USER_SOURCE, UserSink } from './user-sink.ts'
import {
  Stream,
  brokersOutside,
  describeTopics,
  backlogNote,
  everySourcePast,
  isrTable,
  lab,
  lastStallEnd,
  labBrokers,
  sinkHost,
  startPool,
  timesNote,
  waitFullIsr
} from './drill.ts'
import type { Pool } from './drill.ts'

const PARTITIONS = 6
const SOURCES = ['unordered', 'ordered'] as const
/**
 * The zone lost: its broker leads every partition of the drill topic. Zone c by default; zone a's broker is the
 * first of every client's bootstrap list, and losing it costs Shoal's clients a minute more (docs/faults.md,
 * SHOAL_LAB_ZONE=a), past the PingSources' 100-tick catch-up.
 */
const ZONE = process.env.SHOAL_LAB_ZONE ?? 'c'

describe('drill: the zone of the busy partitions’ leaders lost', () => {
  it('keeps producing with acks=all, loses no acknowledged record, and the store answers', async () => {
    const started = Date.now()
    const prefix = uniqueName('lab-brokers')
    const topic = `${prefix}-topic`
    const zoneBroker = labBrokers().find(b => b.rack === ZONE)!
    const others = labBrokers().filter(b => b.rack !== ZONE)
    // Every partition led in the zone that will be lost, its two followers in the two other zones.
    const admin = new Admin({ clientId: 'lab-admin', bootstrapBrokers: brokers() })
    try {
      await admin.createTopics({
        topics: [topic],
        assignments: Array.from({ length: PARTITIONS }, (_, partition) => ({
          partition,
          brokers: [zoneBroker.nodeId, ...(partition % 2 ? others : [...others].reverse()).map(b => b.nodeId)]
        }))
      })
    } finally {
      await admin.close()
    }
    const sink = await new CountingSink().start(sinkHost().address)
    const pingSink = await new TickSink().start(sinkHost().address)
    // The three sources: two to the Node counting sink, and one, key-ordered, to a sink as users run one.
    const userSink = await new UserSink(USER_SOURCE).start(sinkHost().address)
    const drillSources = [...SOURCES.map(name => ({ name, sink })), { name: USER_SOURCE, sink: userSink }]
    const names = drillSources.map(s => s.name)
    const producer = new IdProducer('broker-zone-loss', topic, PARTITIONS)
    const faults = new NetworkFaults(lab())
    let pool: Pool | undefined
    let stream: Stream | undefined
    const store = storeNames(prefix)
    const topics = [topic, store.resourcesTopic, store.membersTopic, store.contractsTopic]
    try {
      pool = await startPool(prefix)
      const api = pool.controllers.find(c => c.host.zone !== ZONE)!.url
      for (const ordering of SOURCES) {
        await createSource(api, { name: ordering, topic, sink: sink.url(ordering), consumers: 2, ordering })
      }
      await createSource(api, { name: USER_SOURCE, topic, sink: userSink.url, consumers: 2, ordering: 'key' })
      await createEverySecondSources(api, PINGS, pingSink)
      await waitReady(api, names)
      const pingsReady = await readyTimes(api, PINGS)
      await eventually(
        async () => ((await describeTopics([topic])).every(v => v.isr.length === 3) ? true : undefined),
        60_000,
        'the drill topic in sync'
      )
      const replication = await durability([topic, store.resourcesTopic, store.membersTopic])
      console.log(isrTable(await describeTopics(topics), `before the loss of zone ${ZONE}:`))

      // The store's answer after the loss waits for the lost controller's buckets to move: its members' session
      // timeout at the controllers' group coordinator, and, when that coordinator was in the lost zone too, the
      // coordinator's own move first (the new one starts every member's session afresh).
      const coordinator = await controllersCoordinator(store.controllersGroup)
      stream = new Stream(producer)
      await eventually(
        async () => (drillSources.every(s => s.sink.ids(s.name).size >= 300) ? true : undefined),
        120_000,
        'flowing'
      )
      const producedAtLoss = stream.produced
      const behindAtLoss = backlogNote(drillSources, producedAtLoss)
      const zoneHosts = lab().hosts.filter(h => h.zone === ZONE)
      for (const host of zoneHosts) await faults.cutHost(host.name)
      const lostAt = Date.now()

      const outside = brokersOutside(ZONE)
      // Each outcome is awaited from the loss on, side by side: the store's answer does not wait for the drill's own
      // producer (itself held by the lost leaders), nor the producer for the store.
      const led = eventually(
        async () => {
          const views = await describeTopics([topic], outside)
          return views.length === PARTITIONS && views.every(v => v.leader > 0 && v.leader !== zoneBroker.nodeId)
            ? Date.now()
            : undefined
        },
        120_000,
        `every partition of ${topic} led outside zone ${ZONE}`
      )
      // The first send after the loss holds ids from producedAtLoss + 50 on (the stream sends 50 at a time).
      const firstAfterLoss = producedAtLoss + 50
      const producing = eventually(
        async () => (stream!.produced >= producedAtLoss + 200 ? Date.now() : undefined),
        120_000,
        'the producer acknowledged again'
      )
      const markerSink = pingSink.url('markers')
      // The store's answers, for the figures: read and write status, from how long after the loss, how many in a row.
      // Each attempt's read and write times too, and the write's bucket and its owner as the API saw it before: which
      // of them waited, and for what.
      const answers: Array<{ statuses: string; fromS: number; count: number; readS: number; writeS: number }> = []
      let firstWrite = ''
      const storeAnswer = eventually(
        async () => {
          const from = Date.now()
          const name = `during-${Date.now()}`
          if (firstWrite === '') firstWrite = await bucketNote(api, `PingSource/default/${name}`)
          const read = await http('GET', `${api}${PS}`)
          const readAt = Date.now()
          const manifest = everySecondManifest(name, markerSink).replace('"* * * * * *"', '"0 0 1 1 *"')
          const written = await http('POST', `${api}${PS}`, manifest)
          const statuses = `${read.status}/${written.status}`
          const [readS, writeS] = [(readAt - from) / 1000, (Date.now() - readAt) / 1000]
          const last = answers.at(-1)
          if (last?.statuses === statuses) Object.assign(last, { count: last.count + 1, readS, writeS })
          else answers.push({ statuses, fromS: (from - lostAt) / 1000, count: 1, readS, writeS })
          return read.status === 200 && written.status === 201 ? Date.now() : undefined
        },
        120_000,
        'the store answering a read and a write'
      )
      const delivering = everySourcePast(drillSources, PARTITIONS, firstAfterLoss)
      const [ledAt, producingAt, storeAt, { at: deliveringAt, each: deliveringEach }] = await Promise.all([
        led,
        producing,
        storeAnswer,
        delivering
      ])
      console.log(isrTable(await describeTopics(topics, outside), `zone ${ZONE} lost (asked of brokers ${outside}):`))

      const healAt = await faults.heal()
      const steadyAt = Math.max(...lastStallEnd(drillSources, PARTITIONS, lostAt, healAt))
      // Asked of the brokers that stayed: the one coming back answers from its old metadata (all in sync) at first.
      await waitFullIsr(topics, 120_000, outside)
      const syncedAt = Date.now()
      console.log(isrTable(await describeTopics(topics), `after the heal:`))
      await stream.stop()
      await settle('broker-zone-loss', producer.produced, drillSources)
      // The user sink's source, counted against the topic as Kafka's own tool reads it: every offset delivered.
      const offsets = await userSink.settleAgainst(labBrokers(), topic)
      const pingsStop = Date.now()
      const times = timesNote({
        'loss→leaders moved': ledAt - lostAt,
        'loss→producing': producingAt - lostAt,
        'loss→store answering': storeAt - lostAt,
        'loss→delivering': deliveringAt - lostAt,
        ...Object.fromEntries(drillSources.map((source, i) => [`loss→${source.name}`, deliveringEach[i]! - lostAt])),
        'producing→delivering': deliveringAt - producingAt,
        'loss→steady': steadyAt - lostAt,
        'loss→full service': Math.max(ledAt, producingAt, storeAt, deliveringAt) - lostAt,
        'heal→in sync': syncedAt - healAt,
        took: Date.now() - started
      })
      const notes = {
        zone: ZONE,
        behindAtLoss,
        broker: zoneBroker.nodeId,
        failedSends: producer.failedSends,
        controllersCoordinator: `broker ${coordinator}${coordinator === zoneBroker.nodeId ? ' (lost)' : ''}`,
        storeAnswers: answers
          .map(
            a =>
              `${a.statuses} ×${a.count} from ${a.fromS.toFixed(1)} s ` +
              `(last: read ${a.readS.toFixed(1)} s, write ${a.writeS.toFixed(1)} s)`
          )
          .join('; '),
        firstWrite,
        replication: replication[topic] ?? '?',
        times
      }
      const kafka = reportEach('broker-zone-loss', producer.produced, drillSources, notes)
      console.log(`# drill broker-zone-loss ${USER_SOURCE}: ${offsets.note}`)
      const pings = await reportPings(
        'broker-zone-loss',
        pingSink,
        pingsReady,
        pingsStop,
        { times },
        {
          loss: lostAt,
          heal: healAt
        }
      )
      for (const name of [topic, store.resourcesTopic, store.membersTopic]) {
        assert.equal(replication[name], 'replicas 3, min.insync.replicas 2', name)
      }
      for (const figures of kafka) {
        assert.equal(figures.produced, producer.produced.size)
        assert.equal(figures.lost, 0, `${figures.drill}: lost ${figures.lostIds.slice(0, 20).join(' ')}`)
      }
      userSink.assertEveryOffset(offsets)
      assertPings('broker-zone-loss', pings)
    } finally {
      await stream?.stop()
      await faults.heal()
      await producer.close()
      await pool?.stop()
      await sink.close()
      await userSink.close()
      await pingSink.close()
      await waitFullIsr(topics).catch(error => console.log(`# broker-zone-loss: ${String(error)}`))
    }
  })
})

/** The bucket a key is written to, and its owner as the controller at `api` knows it (asked before the write). */
async function bucketNote(api: string, key: string): Promise<string> {
  const answer = await http('GET', `${api}/internal/v1/controllers`)
  const body = answer.body as { buckets: number; replicas: Array<{ replicaId: string; buckets: number[] }> }
  const bucket = bucketOf(key, body.buckets)
  const owner = body.replicas.find(r => r.buckets.includes(bucket))?.replicaId ?? 'none'
  return `bucket ${bucket} (owner ${owner})`
}

/** The broker coordinating the controllers' group (FindCoordinator, asked of any broker). */
async function controllersCoordinator(group: string): Promise<number> {
  const admin = new Admin({ clientId: 'lab-coordinator', bootstrapBrokers: brokers() })
  try {
    const [found] = await admin.findCoordinator({ keyType: FindCoordinatorKeyTypes.GROUP, keys: [group] })
    return found?.nodeId ?? -1
  } finally {
    await admin.close()
  }
}
