// Group churn end to end (issue 12): a KafkaSource created over a backlog, its members joining on two and then
// three dispatcher processes, scaled 3 → 6 → 1 → 0 → 4 with records produced after every step, a dispatcher
// SIGKILLed mid-step and replaced; once per delivery regime (Knative's two orderings, and issue 16's
// `ordering: key`, batches and a concurrency limit), against a sink that answers at once (after 3 ms under the
// limit, so requests overlap). What counts is the topic itself: every offset of every partition below the log end
// reaches the sink at least once, the group ends balanced, and its committed offsets reach the log end; after the
// scale to 0, nothing below the offsets the group had committed then is sent again; of an answered batch, all of
// it comes again or nothing. Duplicates are printed, not asserted: a SIGKILL legitimately redelivers what
// was delivered but not yet committed. Where the regime keeps an order (a partition under `ordered`, batched or
// not; a partition's key under `key`), the sink checks it as test/helpers/lane-order.ts states it: a record only
// once every earlier one of its lane was answered, going back only as a redelivery. Under a
// `delivery.shoal.dev/max-concurrency` limit the sink counts its concurrent requests: at most the limit while one
// dispatcher holds the source (consumers 1), at most the limit per dispatcher process throughout (docs/delivery.md).
import assert from 'node:assert/strict'
import { once } from 'node:events'
import { writeFileSync } from 'node:fs'
import { createServer } from 'node:http'
import type { IncomingMessage, Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import type { TestContext } from 'node:test'
import { Kafka, logLevel } from 'kafkajs'
import { scaleKafkaSource, startControllerProcess } from '../helpers/controllers.ts'
import type { ControllerProcess } from '../helpers/controllers.ts'
import { http } from '../helpers/http.ts'
import { brokers, uniqueName } from '../helpers/kafka.ts'
import { eventually } from '../helpers/wait.ts'
import { LaneOrderLog } from '../helpers/lane-order.ts'
import { committedOffsets, createTopic, describeGroup, endOffsets } from '../kafka-source/helpers.ts'
import { startDispatcherProcess } from '../helpers/dispatchers.ts'
import type { DispatcherProcess } from '../helpers/dispatchers.ts'
import { startPythonSink } from '../sinks/python-sink.ts'

const KS = '/apis/sources.knative.dev/v1beta1/namespaces/default/kafkasources'
const NAME = 'churn'
const LIVENESS = ['--liveness-timeout', '3s']
const PARTITIONS = 8
/** Waiting before the source exists: 375 records of 1 KiB a partition, one batch of ~390 KB each. */
const BACKLOG = 3_000
const PER_STEP = 1_000
const VALUE = Buffer.alloc(1024, 'x')
/** Keys per partition: the n-th record of a partition (its offset n) has the key `k<n mod KEYS>`. */
const KEYS = 8
/** At most this many dispatcher processes run at once (two, a third joining; the killed one's replacement after). */
const MOST_DISPATCHERS = 3

/** How a source delivers, and what its sink checks beyond "every offset arrives". */
interface Regime {
  readonly name: string
  readonly ordering: 'ordered' | 'unordered' | 'key'
  readonly annotations?: Readonly<Record<string, string>>
  /** Which order the sink checks: none, each partition's, or each key's of a partition. */
  readonly lanes: 'none' | 'partition' | 'key'
  /** The source's `delivery.shoal.dev/max-concurrency`, counted at the sink. */
  readonly maxConcurrency?: number
  /** How long the sink takes to answer (0: at once); a few ms let requests overlap, so a limit has work to do. */
  readonly answerMs?: number
  /** `python`: the sink is Python's standard-library server (listen backlog 5) with the CloudEvents SDK. */
  readonly sink?: 'node' | 'python'
}

const BATCHES = { 'delivery.shoal.dev/batch-max-events': '50', 'delivery.shoal.dev/batch-max-wait': 'PT0.02S' }
const REGIMES: readonly Regime[] = [
  { name: 'ordered', ordering: 'ordered', lanes: 'partition' },
  { name: 'unordered', ordering: 'unordered', lanes: 'none' },
  { name: 'key', ordering: 'key', lanes: 'key' },
  { name: 'batches ordered', ordering: 'ordered', annotations: BATCHES, lanes: 'partition' },
  { name: 'key in batches', ordering: 'key', annotations: BATCHES, lanes: 'key' },
  {
    name: 'max-concurrency 2',
    ordering: 'unordered',
    annotations: { 'delivery.shoal.dev/max-concurrency': '2' },
    lanes: 'none',
    maxConcurrency: 2,
    answerMs: 3
  },
  // Key lanes met a small accept backlog hardest (docs/delivery.md, "Sinks that accept slowly").
  { name: 'key, Python sink', ordering: 'key', lanes: 'key', sink: 'python', answerMs: 2 }
]

/** Everything a test started, so the suite's `after` can stop what a timed-out test left running. */
const leftovers = new Set<{ stop(): Promise<void> }>()

after(async () => {
  await Promise.all([...leftovers].map(p => p.stop().catch(() => undefined)))
})

describe('a KafkaSource through consumer-group churn', () => {
  for (const regime of REGIMES) {
    it(`${regime.name}: every offset of the topic reaches the sink through joins, scale steps to 1, 0 and back, and a SIGKILL`, async t => {
      await churn(t, regime)
    })
  }
})

interface Placement {
  podName: string
  vreplicas: number
}

async function churn(t: TestContext, regime: Regime): Promise<void> {
  const started = Date.now()
  const prefix = uniqueName(`churn-${regime.name.replaceAll(' ', '-')}`)
  const topic = `${prefix}-topic`
  const group = `${prefix}-group`
  await createTopic(topic, PARTITIONS)

  const sink =
    regime.sink === 'python'
      ? await startPythonChurnSink(regime.lanes, regime.answerMs ?? 0)
      : await startSink(regime.lanes, regime.answerMs ?? 0)
  leftovers.add(sink)
  const kafka = new Kafka({ clientId: prefix, brokers: brokers(), logLevel: logLevel.NOTHING })
  // Idempotent, acks=all, one send of many records: one large batch a partition, as real clients write them.
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 })
  await producer.connect()
  let produced = 0
  const produce = async (count: number) => {
    // Record n goes to partition n mod P as its ⌊n / P⌋-th record: that is its offset (one producer, a new topic).
    const messages = Array.from({ length: count }, (_, i) => ({
      partition: (produced + i) % PARTITIONS,
      key: keyOf(Math.floor((produced + i) / PARTITIONS)),
      value: VALUE
    }))
    await producer.send({ topic, acks: -1, messages })
    produced += count
  }

  let controller: ControllerProcess | undefined
  const dispatchers = new Map<string, DispatcherProcess>()
  /** Every process started, the killed one too, for its log. */
  const logs: Array<{ name: string; process: DispatcherProcess }> = []
  const startDispatcher = async (id: string, zone: string) => {
    const dispatcher = await startDispatcherProcess(prefix, id, zone, `${zone}-1`, 10, LIVENESS, { logLevel: 'info' })
    leftovers.add(dispatcher)
    dispatchers.set(id, dispatcher)
    logs.push({ name: `${id}#${logs.filter(l => l.process.id === id).length}`, process: dispatcher })
  }
  const step = (what: string) =>
    t.diagnostic(
      `${((Date.now() - started) / 1000).toFixed(1)} s ${what}: ${sink.seen.size}/${produced} delivered, ${sink.events} events in ${sink.requests} requests`
    )

  try {
    await produce(BACKLOG)
    controller = await startControllerProcess(prefix, LIVENESS)
    leftovers.add(controller)
    const api = controller.url
    await startDispatcher('dispatcher-0', 'a')
    await startDispatcher('dispatcher-1', 'b')
    step('backlog produced, two dispatchers up')

    const annotations = Object.entries(regime.annotations ?? {}).map(([k, v]) => `    ${k}: "${v}"`)
    const created = await http(
      'POST',
      `${api}${KS}`,
      [
        'apiVersion: sources.knative.dev/v1beta1',
        'kind: KafkaSource',
        'metadata:',
        `  name: ${NAME}`,
        ...(annotations.length > 0 ? ['  annotations:', ...annotations] : []),
        'spec:',
        `  bootstrapServers: [${brokers().join(',')}]`,
        `  topics: [${topic}]`,
        `  consumerGroup: ${group}`,
        '  consumers: 3',
        '  initialOffset: earliest',
        `  ordering: ${regime.ordering}`,
        `  sink: {uri: "${sink.url}"}`,
        ''
      ].join('\n')
    )
    assert.equal(created.status, 201, JSON.stringify(created.body))
    await settled(api, group, topic, 3)
    await flowing(sink, () => produced, 300)
    step('consumers 3 on two dispatchers')

    // A third dispatcher joins mid-stream, and the scale-up places members on it.
    await startDispatcher('dispatcher-2', 'c')
    await scaleKafkaSource(api, NAME, 6)
    await produce(PER_STEP)
    const six = await settled(api, group, topic, 6)
    await flowing(sink, () => produced, 200)
    step(`consumers 6 on ${describePlacements(six)}`)

    // SIGKILL the dispatcher holding most members while records wait; the controller moves its vreplicas.
    await produce(PER_STEP)
    const victim = [...six].sort((a, b) => b.vreplicas - a.vreplicas)[0]!.podName
    await dispatchers.get(victim)!.stop('SIGKILL')
    dispatchers.delete(victim)
    step(`${victim} SIGKILLed`)
    const moved = await settled(api, group, topic, 6, victim)
    step(`consumers 6 moved off ${victim} to ${describePlacements(moved)}`)
    // Its replacement (the same id, as a restarted pod) gets members at the next scale-up.
    await startDispatcher(victim, String.fromCharCode(97 + Number(victim.slice(-1))))

    await scaleKafkaSource(api, NAME, 1)
    await produce(PER_STEP)
    const one = await settled(api, group, topic, 1)
    assert.equal(one.length, 1, `one dispatcher holds the source: ${describePlacements(one)}`)
    // One dispatcher alone sends now (the members that left drained first): what the sink sees of this step's
    // records at once is that dispatcher's concurrency.
    await flowing(sink, () => produced, produced)
    sink.concurrency.most = 0
    await produce(PER_STEP)
    await flowing(sink, () => produced, produced)
    const alone = sink.concurrency.most
    step(`consumers 1 on ${describePlacements(one)}, at most ${alone} requests at once`)

    await scaleKafkaSource(api, NAME, 0)
    await settled(api, group, topic, 0)
    // Nobody consumes now, so what the group committed must all be at the sink already.
    const committedAtZero = await committedOffsets(group, topic, PARTITIONS)
    const skipped = missing(sink.seen, committedAtZero)
    assert.equal(skipped.length, 0, `committed, never delivered (consumers 0): ${ranges(skipped)}`)
    // From here on the next members start at these commits: nothing below them is sent again.
    const atZero = sink.arrivals.length
    await produce(PER_STEP)
    step(`consumers 0, committed ${committedAtZero.join(',')}`)

    await scaleKafkaSource(api, NAME, 4)
    await produce(PER_STEP)
    const four = await settled(api, group, topic, 4)
    step(`consumers 4 on ${describePlacements(four)}`)

    // The truth is the topic: every offset below each partition's log end.
    const ends = await endOffsets(topic, PARTITIONS)
    assert.equal(
      ends.reduce((n, e) => n + Number(e), 0),
      produced,
      `log ends ${ends.join(',')} hold what was produced`
    )
    await eventually(
      async () => (missing(sink.seen, ends).length === 0 ? true : undefined),
      60_000,
      'every offset at the sink'
    ).catch(() => undefined)
    const lost = missing(sink.seen, ends)
    const duplicates = sink.events - sink.seen.size
    t.diagnostic(
      `${regime.name}: ${produced} records in the topic, ${sink.seen.size} delivered, ${sink.events} events in ${sink.requests} requests, duplicates ${duplicates} (${((100 * duplicates) / produced).toFixed(2)} %), lost ${lost.length}`
    )
    t.diagnostic(`delivered more than once: ${ranges(redelivered(sink.seen))}`)
    assert.equal(lost.length, 0, `lost: ${ranges(lost)}`)
    assert.deepEqual(sink.wrongKeys.slice(0, 5), [], `${sink.wrongKeys.length} events with another key than produced`)
    const belowCommit = sink.arrivals
      .slice(atZero)
      .filter(([partition, offset]) => offset < Number(committedAtZero[partition]))
      .sort((a, b) => a[0] - b[0] || a[1] - b[1])
    assert.equal(belowCommit.length, 0, `sent again below the commit of consumers 0: ${ranges(belowCommit)}`)
    // A batch is handled whole (docs/delivery.md, "Commits"): what comes again of an answered batch is all of it or
    // nothing, never a part cut off by a commit inside it — when a batch is consecutive offsets. With `ordering: key`
    // a batch holds some keys' records only, so a commit (the contiguous handled prefix) may fall among them: what
    // comes again of it is then the records from that commit on, a suffix by offset, never a part with a hole.
    const split = splitBatches(sink, regime.ordering === 'key' ? 'suffix' : 'whole')
    assert.deepEqual(split.slice(0, 5), [], `${split.length} answered batches partly delivered again`)
    if (regime.lanes !== 'none') {
      const order = sink.order.check()
      const restarts = [...order.restarts.values()].reduce((n, r) => n + r, 0)
      t.diagnostic(
        `order per ${regime.lanes}: ${order.lanes} lanes, ${order.restarts.size} went back (redelivery) ${restarts} times`
      )
      assert.deepEqual(order.violations.slice(0, 10), [], `${order.violations.length} order violations`)
    }
    t.diagnostic(
      `at most ${sink.concurrency.most} requests at once from the scale to 1 on, ${alone} with one dispatcher`
    )
    if (regime.maxConcurrency !== undefined) {
      assert.ok(alone >= 1 && alone <= regime.maxConcurrency, `one dispatcher: ${alone} requests at once`)
      assert.ok(
        sink.concurrency.mostEver <= regime.maxConcurrency * MOST_DISPATCHERS,
        `${sink.concurrency.mostEver} requests at once on ${MOST_DISPATCHERS} dispatchers`
      )
    }

    // Settled: four members, each holding its share of the partitions, and nothing left to commit.
    const balanced = await eventually(
      async () => {
        const { state, members } = await describeGroup(group, topic)
        return state.toLowerCase() === 'stable' && isBalanced(members, 4) ? members : undefined
      },
      30_000,
      'the group balanced over four members'
    ).catch(async () => (await describeGroup(group, topic)).members)
    assert.ok(isBalanced(balanced, 4), `unbalanced group: ${describeMembers(balanced)}`)
    const committed = await eventually(
      async () => {
        const offsets = await committedOffsets(group, topic, PARTITIONS)
        return offsets.every((o, i) => o === ends[i]) ? offsets : undefined
      },
      30_000,
      'the group committed at the log end'
    ).catch(() => committedOffsets(group, topic, PARTITIONS))
    assert.deepEqual(committed, ends, 'lag 0 on every partition')
    step('done')
  } catch (error) {
    // What a reader needs to tell the test from the code: the group, its offsets, and every process's log.
    const [ends, committed, described] = await Promise.all([
      endOffsets(topic, PARTITIONS).catch(() => []),
      committedOffsets(group, topic, PARTITIONS).catch(() => []),
      describeGroup(group, topic).catch(() => undefined)
    ])
    t.diagnostic(`log ends ${ends.join(',')}; committed ${committed.join(',')}`)
    if (described) t.diagnostic(`group ${described.state}: ${describeMembers(described.members)}`)
    if (ends.length > 0) t.diagnostic(`not (yet) at the sink: ${ranges(missing(sink.seen, ends))}`)
    for (const { name, process } of logs) {
      const file = join(tmpdir(), `${prefix}-${name}.log`)
      writeFileSync(file, process.stderr)
      const notable = process.stderr
        .split('\n')
        .filter(line => /"level":[45]\d|revoked|handing over|handover|refused|release/.test(line))
      t.diagnostic(`${name}: log in ${file}; ${notable.length} warnings, errors and hand-overs`)
      for (const line of notable.slice(-20)) t.diagnostic(`  ${line}`)
    }
    throw error
  } finally {
    await producer.disconnect()
    await controller?.stop()
    await Promise.all([...dispatchers.values()].map(d => d.stop()))
    await sink.stop()
    for (const p of [controller, sink, ...logs.map(l => l.process)]) if (p) leftovers.delete(p)
  }
}

interface Sink {
  readonly url: string
  /** How often each ce-id (`partition:P/offset:O`) arrived. */
  readonly seen: Map<string, number>
  /** Every event's [partition, offset], in the order they arrived. */
  readonly arrivals: Array<[number, number]>
  /** Each request of several events (a batch) answered: its ids, and how many events had arrived by its answer. */
  readonly batches: Array<{ readonly ids: readonly string[]; readonly answeredAt: number }>
  /** The order lanes' arrivals and answers, for the order check. */
  readonly order: LaneOrderLog
  /** Events whose key is not the one produced at their offset. */
  readonly wrongKeys: string[]
  /** Requests open now, the most since `most` was last set to 0, and the most ever. */
  readonly concurrency: { now: number; most: number; mostEver: number }
  readonly requests: number
  /** Events received (a batch holds several). */
  readonly events: number
  stop(): Promise<void>
}

/** The key produced at `offset` of every partition. */
function keyOf(offset: number): string {
  return `k${offset % KEYS}`
}

/** The events of a request: one in binary mode, a batch's in batched mode. */
function eventsOf(req: IncomingMessage, body: Buffer): Array<{ partition: number; offset: number; key: string }> {
  const list: Array<{ id: unknown; key?: unknown }> = String(req.headers['content-type']).startsWith(
    'application/cloudevents-batch+json'
  )
    ? (JSON.parse(body.toString()) as Array<{ id: unknown; key?: unknown }>)
    : [{ id: req.headers['ce-id'], key: req.headers['ce-key'] }]
  return list.map(({ id, key }) => {
    const match = /^partition:(\d+)\/offset:(\d+)$/.exec(String(id))
    assert.ok(match, `an event id ${String(id)}`)
    return { partition: Number(match[1]), offset: Number(match[2]), key: String(key) }
  })
}

/** A sink that records every event (binary or batched), answers 202 after `answerMs` and counts requests open at once. */
async function startSink(lanes: Regime['lanes'], answerMs: number): Promise<Sink> {
  const seen = new Map<string, number>()
  const arrivals: Array<[number, number]> = []
  const batches: Sink['batches'] = []
  const order = new LaneOrderLog()
  const wrongKeys: string[] = []
  const concurrency = { now: 0, most: 0, mostEver: 0 }
  let requests = 0
  let events = 0
  const server: Server = createServer((req, res) => {
    concurrency.now++
    concurrency.most = Math.max(concurrency.most, concurrency.now)
    concurrency.mostEver = Math.max(concurrency.mostEver, concurrency.now)
    res.on('close', () => concurrency.now--)
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      requests++
      const byLane = new Map<string, number[]>()
      const ids: string[] = []
      for (const { partition, offset, key } of eventsOf(req, Buffer.concat(chunks))) {
        const id = `partition:${partition}/offset:${offset}`
        ids.push(id)
        seen.set(id, (seen.get(id) ?? 0) + 1)
        arrivals.push([partition, offset])
        events++
        if (key !== keyOf(offset)) wrongKeys.push(`${id} key ${key}`)
        if (lanes === 'none') continue
        const lane = lanes === 'partition' ? `p${partition}` : `p${partition}/${key}`
        byLane.set(lane, [...(byLane.get(lane) ?? []), offset])
      }
      for (const [lane, offsets] of byLane) order.arrived(lane, offsets)
      const answer = (): void => {
        // Answered before the answer leaves: the sender can start a lane's next record only after this.
        for (const [lane, offsets] of byLane) order.answered(lane, offsets)
        if (ids.length > 1) batches.push({ ids, answeredAt: arrivals.length })
        res.writeHead(202).end()
      }
      if (answerMs === 0) answer()
      else setTimeout(answer, answerMs)
    })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  let stopped: Promise<void> | undefined
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    seen,
    arrivals,
    batches,
    order,
    wrongKeys,
    concurrency,
    get requests() {
      return requests
    },
    get events() {
      return events
    },
    stop() {
      stopped ??= new Promise(resolve => {
        server.close(() => resolve())
        server.closeAllConnections()
      })
      return stopped
    }
  }
}

/**
 * The same checks on test/sinks/python_sink.py (binary events only): it prints each event as it arrives and again
 * before its answer leaves, which is what the order log needs. It cannot count open requests.
 */
async function startPythonChurnSink(lanes: Regime['lanes'], answerMs: number): Promise<Sink> {
  const seen = new Map<string, number>()
  const arrivals: Array<[number, number]> = []
  const order = new LaneOrderLog()
  const wrongKeys: string[] = []
  const laneOf = new Map<string, { lane: string; offset: number }>()
  let requests = 0
  const python = await startPythonSink(['--trace', '--delay-ms', String(answerMs)], line => {
    if (line.kind === 'answered') {
      const arrived = laneOf.get(line.id)
      laneOf.delete(line.id)
      if (arrived !== undefined) order.answered(arrived.lane, [arrived.offset])
      return
    }
    const { id = '', key = '' } = line.attributes
    const match = /^partition:(\d+)\/offset:(\d+)$/.exec(id)
    assert.ok(match, `an event id ${id}`)
    const partition = Number(match[1])
    const offset = Number(match[2])
    requests++
    seen.set(id, (seen.get(id) ?? 0) + 1)
    arrivals.push([partition, offset])
    if (key !== keyOf(offset)) wrongKeys.push(`${id} key ${key}`)
    if (lanes === 'none') return
    const lane = lanes === 'partition' ? `p${partition}` : `p${partition}/${key}`
    laneOf.set(id, { lane, offset })
    order.arrived(lane, [offset])
  })
  return {
    url: python.url,
    seen,
    arrivals,
    batches: [],
    order,
    wrongKeys,
    concurrency: { now: 0, most: 0, mostEver: 0 },
    get requests() {
      return requests
    },
    get events() {
      return requests
    },
    stop: () => python.stop()
  }
}

/** `shoal scale kafkasource churn --consumers N` over the API: read, replace with the new count, retried on 409. */
/**
 * Waits until the controller has placed `consumers` vreplicas (none on `gone`) and Kafka's group shows exactly
 * that many members, none of `gone`, stable, with every partition assigned once; returns the placements.
 */
async function settled(
  api: string,
  group: string,
  topic: string,
  consumers: number,
  gone?: string
): Promise<Placement[]> {
  let last = ''
  return eventually(
    async () => {
      const source = (await http('GET', `${api}${KS}/${NAME}`)).body
      const placements = (source.status?.placements ?? []) as Placement[]
      const { state, members } = await describeGroup(group, topic)
      last = `placements ${describePlacements(placements)}; group ${state}: ${describeMembers(members)}`
      if (placements.reduce((n, p) => n + p.vreplicas, 0) !== consumers) return undefined
      if (gone !== undefined && placements.some(p => p.podName === gone)) return undefined
      if (consumers === 0) return members.size === 0 ? placements : undefined
      if (state.toLowerCase() !== 'stable' || members.size !== consumers) return undefined
      if (gone !== undefined && [...members.keys()].some(m => m.startsWith(`${gone}-`))) return undefined
      const assigned = [...members.values()].flat().sort((a, b) => a - b)
      return assigned.length === PARTITIONS && assigned.every((p, i) => p === i) ? placements : undefined
    },
    45_000,
    `${consumers} consumers placed and in the group`
  ).catch((error: Error) => {
    throw new Error(`${error.message} (last seen: ${last})`)
  })
}

/** Waits until `by` more records reached the sink (or all produced did), so the stream is flowing. */
async function flowing(sink: Sink, produced: () => number, by: number): Promise<void> {
  const from = sink.seen.size
  await eventually(
    async () => (sink.seen.size >= Math.min(from + by, produced()) ? true : undefined),
    45_000,
    `${by} more records at the sink`
  )
}

/** Whether `consumers` members hold every partition once, each between ⌊P/M⌋ and ⌈P/M⌉ of them. */
function isBalanced(members: Map<string, number[]>, consumers: number): boolean {
  const held = [...members.values()]
  const assigned = held.flat().sort((a, b) => a - b)
  return (
    members.size === consumers &&
    assigned.length === PARTITIONS &&
    assigned.every((p, i) => p === i) &&
    held.every(h => h.length >= Math.floor(PARTITIONS / consumers) && h.length <= Math.ceil(PARTITIONS / consumers))
  )
}

/** The answered batches of which some events, but not all, arrived again after the answer. */
function splitBatches(sink: Sink, allowed: 'whole' | 'suffix'): string[] {
  const arrivedAt = new Map<string, number[]>()
  sink.arrivals.forEach(([partition, offset], i) => {
    const id = `partition:${partition}/offset:${offset}`
    arrivedAt.set(id, [...(arrivedAt.get(id) ?? []), i])
  })
  return sink.batches
    .filter(({ ids, answeredAt }) => {
      // The batch's ids are in offset order: which of them arrived again after it was answered.
      const again = ids.map(id => arrivedAt.get(id)!.some(i => i >= answeredAt))
      const first = again.indexOf(true)
      if (first === -1) return false
      if (allowed === 'whole') return first > 0 || again.includes(false)
      return again.slice(first).includes(false)
    })
    .map(({ ids }) => `${ids[0]} … ${ids[ids.length - 1]}`)
}

/** The offsets below `ends` (per partition) that never reached the sink, as [partition, offset]. */
function missing(seen: Map<string, number>, ends: readonly bigint[]): Array<[number, number]> {
  const out: Array<[number, number]> = []
  ends.forEach((end, partition) => {
    for (let offset = 0; offset < Number(end); offset++) {
      if (!seen.has(`partition:${partition}/offset:${offset}`)) out.push([partition, offset])
    }
  })
  return out
}

/** The offsets that reached the sink more than once, as [partition, offset], in order. */
function redelivered(seen: Map<string, number>): Array<[number, number]> {
  const out: Array<[number, number]> = []
  for (const [id, count] of seen) {
    const match = /^partition:(\d+)\/offset:(\d+)$/.exec(id)
    if (count > 1 && match) out.push([Number(match[1]), Number(match[2])])
  }
  return out.sort((a, b) => a[0] - b[0] || a[1] - b[1])
}

/** `p3: 0-374, p5: 12-20` for offsets as `missing` lists them. */
function ranges(offsets: ReadonlyArray<[number, number]>): string {
  const parts: string[] = []
  for (let i = 0; i < offsets.length;) {
    const [partition, from] = offsets[i]!
    let to = from
    while (i + 1 < offsets.length && offsets[i + 1]![0] === partition && offsets[i + 1]![1] === to + 1)
      to = offsets[++i]![1]
    parts.push(`p${partition}: ${from === to ? from : `${from}-${to}`}`)
    i++
  }
  return parts.length === 0 ? 'none' : `${offsets.length} offsets, ${parts.join(', ')}`
}

function describePlacements(placements: readonly Placement[]): string {
  return placements.map(p => `${p.podName}×${p.vreplicas}`).join(', ') || 'none'
}

function describeMembers(members: Map<string, number[]>): string {
  return [...members].map(([member, partitions]) => `${member} [${partitions.join(',')}]`).join(', ') || 'none'
}
