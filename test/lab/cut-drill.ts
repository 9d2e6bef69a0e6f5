// The cut drills (zone-cut, dispatcher-cut and one-way-cut .lab.ts), one body. Drill: one zone — or one dispatcher's
// host, or that host's packets to everyone but the sink host (`CutKind`) — cut off from the other two while records
// stream and PingSources fire every second. The cut
// zone — the zone of the dispatcher running the PingSources — keeps its broker, controller (made the scheduler
// leader first, in a zone cut: the worst case) and dispatchers,
// which still reach each other and the sink host, but nothing in the other zones. Its dispatchers must fence
// themselves (their heartbeats no longer reach the members partition's in-sync replicas) and stop delivering;
// the controllers outside the zone declare them dead and place their vreplicas and schedules on the other
// zones' dispatchers, which deliver on. After the heal the pool settles: every dispatcher Ready, nothing
// pending, then nothing changing (no flapping). Nothing is lost, no second of a PingSource missing.
import assert from 'node:assert/strict'
import { storeNames } from '../../src/store/index.ts'
import { http } from '../helpers/http.ts'
import { eventually } from '../helpers/wait.ts'
import { PS, createEverySecondSources, pingPlacements, readyTimes } from '../helpers/ticks.ts'
import {
  IdProducer,
  KS,
  PINGS,
  assertPings,
  createSource,
  metricSum,
  reportEach,
  reportPings,
  settle,
  waitReady
} from '../faults/harness.ts'
import { NetworkFaults } from './faults.ts'
import { USER_SOURCE, UserSink } from './user-sink.ts'
import {
  GroupWatcher,
  Stream,
  brokersOutside,
  describeTopics,
  dispatcherStates,
  backlogNote,
  everySourcePast,
  fenced,
  lab,
  labBrokers,
  lastStallEnd,
  leadFrom,
  leaderOf,
  placementsOf,
  seconds,
  settledSources,
  shoalCli,
  sinkHost,
  startPool,
  timesNote,
  waitFullIsr,
  startDrill
} from './drill.ts'
import type { Pool } from './drill.ts'

const PARTITIONS = 12
const CONSUMERS = 4
const SOURCES = ['unordered', 'ordered'] as const
/** How long the pool must stay unchanged after the heal to count as settled. */
const QUIET_MS = 10_000

/**
 * What is cut: a zone from the others; one dispatcher's host from every host but the sink host; or only that host's
 * packets to them (the other way they arrive).
 */
export type CutKind = 'zone' | 'dispatcher' | 'one-way'

const LABELS: Record<CutKind, string> = { zone: 'zone-cut', dispatcher: 'dispatcher-cut', 'one-way': 'one-way-cut' }

/**
 * Cuts while records stream; asserts the cut dispatchers fence and deliver nothing, their work moves, the pool
 * settles after the heal, nothing is lost and no PingSource second is missing; prints the times.
 */
export async function cutDrill(kind: CutKind): Promise<void> {
  const label = LABELS[kind]
  const { started, prefix, topic, sink, pingSink } = await startDrill('lab-zone', PARTITIONS)
  // The three sources: two to the Node counting sink, and one, key-ordered, to a sink as users run one.
  const userSink = await new UserSink(USER_SOURCE).start(sinkHost().address)
  const drillSources = [...SOURCES.map(name => ({ name, sink })), { name: USER_SOURCE, sink: userSink }]
  const names = drillSources.map(s => s.name)
  let producer: IdProducer | undefined
  const faults = new NetworkFaults(lab())
  let pool: Pool | undefined
  let watcher: GroupWatcher | undefined
  let stream: Stream | undefined
  try {
    pool = await startPool(prefix)
    const first = pool.controllers[0]!.url
    for (const ordering of SOURCES) {
      await createSource(first, { name: ordering, topic, sink: sink.url(ordering), consumers: CONSUMERS, ordering })
    }
    await createSource(first, { name: USER_SOURCE, topic, sink: userSink.url, consumers: CONSUMERS, ordering: 'key' })
    // Zone a's broker is the first of every client's bootstrap list: cut, it costs Shoal's clients a minute more
    // (docs/faults.md), past the PingSources' 100-tick catch-up. Unless SHOAL_LAB_ZONE names a zone, the
    // PingSources are placed (and so the cut) outside it: zone a's dispatchers are cordoned while they are.
    const avoid = process.env.SHOAL_LAB_ZONE === undefined ? pool.dispatchers.filter(d => d.host.zone === 'a') : []
    if (avoid.length > 0) await shoalCli(first, ['cordon', ...avoid.map(d => d.id)])
    await createEverySecondSources(first, PINGS, pingSink)
    await waitReady(first, names)
    const pingsReady = await readyTimes(first, PINGS)
    if (avoid.length > 0) await shoalCli(first, ['uncordon', ...avoid.map(d => d.id)])
    const pingsOn = await pingPlacements(first)
    const pingDispatcher = pool.dispatchers.find(d => d.id === pingsOn.get(PINGS[0]))
    assert.ok(pingDispatcher, `the PingSources are placed (${JSON.stringify([...pingsOn])})`)
    // The PingSources' zone; SHOAL_LAB_ZONE names another (zone a: the worst case).
    const zone = process.env.SHOAL_LAB_ZONE ?? pingDispatcher.host.zone!
    // A zone's dispatchers, or one: the PingSources' own, or the first of SHOAL_LAB_ZONE.
    const cut =
      kind === 'zone'
        ? pool.dispatchers.filter(d => d.host.zone === zone)
        : [pingDispatcher.host.zone === zone ? pingDispatcher : pool.dispatchers.find(d => d.host.zone === zone)!]
    const cutIds = new Set(cut.map(d => d.id))
    // Asked from outside the cut zone: the cut zone's controller no longer sees the rest of the pool.
    const api = pool.controllers.find(c => c.host.zone !== zone)!.url
    const paths = [...names.map(s => `${KS}/${s}`), ...PINGS.map(p => `${PS}/${p}`)]
    const groups = await Promise.all(
      names.map(async s => (await http('GET', `${api}${KS}/${s}`)).body.spec.consumerGroup as string)
    )
    const outsideBrokers = brokersOutside(zone)
    const made = new IdProducer(label, topic, PARTITIONS, outsideBrokers)
    producer = made
    // A zone cut takes the scheduler leader's zone too: the worst case, the leadership moving while the cut zone's
    // dispatchers are declared dead (docs/faults.md, fix 19).
    const leaderRestarts = kind === 'zone' ? await leadFrom(pool, zone) : 0
    const leaderBefore = await leaderOf(api)
    const placedBefore = await Promise.all(names.map(s => placementsOf(api, `${KS}/${s}`)))
    const onCut = placedBefore.reduce(
      (n, p) => n + [...p].filter(([d]) => cutIds.has(d)).reduce((m, [, v]) => m + v, 0),
      0
    )

    stream = new Stream(made)
    await eventually(
      async () => (drillSources.every(s => s.sink.ids(s.name).size >= 600) ? true : undefined),
      120_000,
      'the stream flowing to every source'
    )
    watcher = new GroupWatcher(groups, outsideBrokers)
    const groupWatch = watcher
    // What the cut zone's members hold when the cut comes: the partitions whose delivery must move elsewhere.
    const moving = await eventually(
      () =>
        groups.every(g => groupWatch.held(g).size > 0)
          ? drillSources.flatMap((source, i) =>
              [...groupWatch.held(groups[i]!)]
                .filter(([member]) => cut.some(d => member.startsWith(`${d.id}-`)))
                .flatMap(([, partitions]) => partitions.map(partition => ({ source, partition })))
            )
          : undefined,
      60_000,
      'a stable assignment of every group'
    )
    const producedAtCut = stream.produced
    const behindAtCut = backlogNote(drillSources, producedAtCut)
    // The dispatcher's host keeps reaching the sink host, as a cut zone does: the drill reads its fence from there,
    // and counts what it delivers while fenced.
    const others = lab().hosts.filter(h => h.name !== cut[0]!.host.name && h.name !== sinkHost().name)
    // Where the heartbeats go, and how often the dispatchers outside the cut had fenced: a healthy dispatcher that
    // fences during the cut is the brokers holding its acks=all heartbeats past its budget (docs/kafka.md).
    const healthy = pool.dispatchers.filter(d => !cutIds.has(d.id))
    const fencesOf = async () =>
      (await Promise.all(healthy.map(d => metricSum(d.metricsUrl, 'shoal_dispatcher_fences_total')))).reduce(
        (a, b) => a + b,
        0
      )
    const healthyFencesBefore = await fencesOf()
    const heartbeats = await membersPartition(storeNames(prefix).membersTopic)
    let cutAt = Number.POSITIVE_INFINITY
    if (kind === 'zone') cutAt = await faults.cutZone(zone)
    // One host at a time: each is one nft transaction on the host whose rule it is.
    else
      for (const h of others) {
        cutAt = Math.min(cutAt, await faults.cutOneWay(cut[0]!.host.name, h.name))
        if (kind === 'dispatcher') await faults.cutOneWay(h.name, cut[0]!.host.name)
      }

    // The cut zone's dispatchers fence themselves, seen over HTTP from the sink host (which still reaches them):
    // fenced, with nothing of theirs in flight any more.
    const fencedAt = new Map<string, number>()
    await eventually(
      async () => {
        for (const d of cut) {
          if (fencedAt.has(d.id) || !(await fenced(d))) continue
          if ((await metricSum(d.metricsUrl, 'shoal_source_in_flight')) === 0) fencedAt.set(d.id, Date.now())
        }
        return fencedAt.size === cut.length ? true : undefined
      },
      60_000,
      `${[...cutIds].join(', ')} fenced`
    )
    const deadAt = await eventually(
      async () => {
        const states = await dispatcherStates(api)
        return [...cutIds].every(id => states.get(id) === 'Dead') ? Date.now() : undefined
      },
      60_000,
      `${[...cutIds].join(', ')} declared dead`
    )
    // Awaited side by side: delivery does not wait for the placement (the groups' remaining members take the cut
    // members' partitions as soon as those leave), and each time is its own.
    const [placedAt, { at: deliveringAt, each: deliveringEach }] = await Promise.all([
      eventually(
        async () => ((await settledSources(api, paths, cutIds)) ? Date.now() : undefined),
        120_000,
        `every source placed outside zone ${zone}, nothing pending`
      ),
      everySourcePast(drillSources, PARTITIONS, producedAtCut + 100)
    ])
    // Delivery of the cut members' partitions resumed: each delivered again, after the cut, from outside the zone
    // (what the new owners deliver first is what the cut ones had not committed). Unlike every partition past the
    // ids produced after the cut, this does not wait for the drill's producer, itself held by the lost broker.
    const cutAddresses = new Set(cut.map(d => d.host.address))
    const movedAt = Math.max(
      cutAt,
      ...moving.map(
        ({ source, partition }) =>
          (source.sink.partitionAnswers.get(`${source.name}|${partition}`) ?? []).find(
            ([at, from]) => at >= cutAt && !cutAddresses.has(from.replace(/^::ffff:/, ''))
          )?.[0] ?? Number.NaN
      )
    )
    const rebalancesCut = watcher.total
    const leaderDuring = await leaderOf(api)

    // The heal, and the pool settling: every dispatcher Ready and unfenced, every source placed with nothing
    // pending, and then QUIET_MS with no change of a dispatcher's state or a placement.
    const healAt = await faults.heal()
    const steadyAt = Math.max(...lastStallEnd(drillSources, PARTITIONS, cutAt, healAt))
    // What each cut dispatcher's host delivered between its fence and the heal, at either sink: must be nothing.
    const whileFenced = cut.map(d => {
      const from = fencedAt.get(d.id)!
      const events = [sink, userSink]
        .flatMap(s => s.acceptedFrom.get(d.host.address) ?? [])
        .filter(t => t > from && t < healAt).length
      const ticks = PINGS.flatMap(p => pingSink.arrivals(p)).filter(
        a => a.from === d.host.address && a.atMs > from && a.atMs < healAt
      ).length
      return { id: d.id, events, ticks }
    })
    const snapshot = async (): Promise<{ ok: boolean; key: string; states: Map<string, string> }> => {
      const states = await dispatcherStates(api)
      const placements = await Promise.all(paths.map(p => placementsOf(api, p)))
      const ready = pool!.dispatchers.every(d => states.get(d.id) === 'Ready')
      const unfenced = (await Promise.all(pool!.dispatchers.map(d => fenced(d)))).every(f => !f)
      const ok = ready && unfenced && (await settledSources(api, paths))
      return { ok, key: JSON.stringify([[...states], placements.map(p => [...p])]), states }
    }
    let last = await snapshot()
    let changedAt = Date.now()
    let flaps = 0
    const readySeen = new Set<string>()
    await eventually(
      async () => {
        const now = await snapshot()
        for (const [id, state] of now.states) {
          if (state === 'Ready') readySeen.add(id)
          else if (readySeen.has(id)) flaps++
        }
        if (now.key !== last.key || !now.ok) changedAt = Date.now()
        last = now
        return now.ok && Date.now() - changedAt >= QUIET_MS ? true : undefined
      },
      120_000,
      `the pool settled after the heal (unchanged for ${QUIET_MS / 1000} s)`
    )
    const settledAt = changedAt
    const healthyFences = (await fencesOf()) - healthyFencesBefore
    await stream.stop()

    await settle(label, made.produced, drillSources)
    // The user sink's source, counted against the topic as Kafka's own tool reads it: every offset delivered.
    const offsets = await userSink.settleAgainst(labBrokers(), topic)
    const pingsStop = Date.now()
    const leaderAfter = await leaderOf(api)
    const times = timesNote({
      'cut→fenced': Math.max(...[...fencedAt.values()]) - cutAt,
      'cut→dead': deadAt - cutAt,
      'cut→placed': placedAt - cutAt,
      'cut→moved delivering': movedAt - cutAt,
      'cut→delivering': deliveringAt - cutAt,
      'cut→steady': steadyAt - cutAt,
      ...Object.fromEntries(drillSources.map((source, i) => [`cut→${source.name}`, deliveringEach[i]! - cutAt])),
      'heal→settled': settledAt - healAt,
      took: Date.now() - started
    })
    const notes = {
      zone,
      cut: kind,
      behindAtCut,
      cutDispatchers: [...cutIds].join(' '),
      vreplicasOnCut: onCut,
      leader: `${leaderBefore?.replicaId}→${leaderDuring?.replicaId}→${leaderAfter?.replicaId}`,
      leaderRestarts,
      rebalances: `${rebalancesCut} during the cut, ${watcher.total} in all`,
      flaps,
      deliveredWhileFenced: whileFenced.reduce((n, f) => n + f.events + f.ticks, 0),
      heartbeats,
      healthyFences,
      failedSends: made.failedSends,
      times
    }
    const kafka = reportEach(label, made.produced, drillSources, notes)
    console.log(`# drill ${label} ${USER_SOURCE}: ${offsets.note}`)
    const pings = await reportPings(
      label,
      pingSink,
      pingsReady,
      pingsStop,
      { zone, times },
      {
        cut: cutAt,
        heal: healAt
      }
    )
    console.log(`# ${label}: cut at +${seconds(cutAt - started)}, ${times}`)
    for (const f of whileFenced) {
      assert.deepEqual([f.events, f.ticks], [0, 0], `${f.id} delivered while fenced (events, ticks)`)
    }
    for (const figures of kafka) {
      assert.equal(figures.produced, made.produced.size)
      assert.equal(figures.lost, 0, `${figures.drill}: lost ${figures.lostIds.slice(0, 20).join(' ')}`)
    }
    userSink.assertEveryOffset(offsets)
    assertPings(label, pings)
    assert.equal(flaps, 0, 'a dispatcher left Ready again after the heal')
  } finally {
    await stream?.stop()
    await watcher?.close()
    // The groups as polled from just before the cut: where the wait for a rebalance went.
    for (const line of watcher?.timeline ?? []) console.log(`# group ${line}`)
    await faults.heal()
    await producer?.close()
    await pool?.stop()
    await sink.close()
    await userSink.close()
    await pingSink.close()
    const store = storeNames(prefix)
    await waitFullIsr([topic, store.membersTopic, store.contractsTopic, store.resourcesTopic]).catch(error =>
      console.log(`# ${label}: ${String(error)}`)
    )
  }
}

/** The heartbeats' partition, as `leader <zone>, followers <zones>`, for the figures. */
async function membersPartition(topic: string): Promise<string> {
  const [view] = await describeTopics([topic])
  if (view === undefined) return 'unknown'
  const zoneOf = (nodeId: number) => labBrokers().find(b => b.nodeId === nodeId)?.rack ?? String(nodeId)
  const followers = view.replicas.filter(r => r !== view.leader).map(zoneOf)
  return `leader ${zoneOf(view.leader)}, followers ${followers.join(' ')}`
}
