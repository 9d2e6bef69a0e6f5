// Group churn end to end (issue 12): a KafkaSource created over a backlog, its members joining on two and then
// three dispatcher processes, scaled 3 → 6 → 1 → 0 → 4 with records produced after every step, a dispatcher
// SIGKILLed mid-step and replaced; once per ordering, against a sink that answers at once. What counts is the
// topic itself: every offset of every partition below the log end reaches the sink at least once, the group ends
// balanced, and its committed offsets reach the log end. Duplicates are printed, not asserted: a SIGKILL
// legitimately redelivers what was delivered but not yet committed.
import assert from 'node:assert/strict'
import { once } from 'node:events'
import { writeFileSync } from 'node:fs'
import { createServer } from 'node:http'
import type { Server } from 'node:http'
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
import { committedOffsets, createTopic, describeGroup, endOffsets } from '../kafka-source/helpers.ts'
import { startDispatcherProcess } from '../helpers/dispatchers.ts'
import type { DispatcherProcess } from '../helpers/dispatchers.ts'

const KS = '/apis/sources.knative.dev/v1beta1/namespaces/default/kafkasources'
const NAME = 'churn'
const LIVENESS = ['--liveness-timeout', '3s']
const PARTITIONS = 8
/** Waiting before the source exists: 375 records of 1 KiB a partition, one batch of ~390 KB each. */
const BACKLOG = 3_000
const PER_STEP = 1_000
const VALUE = Buffer.alloc(1024, 'x')

/** Everything a test started, so the suite's `after` can stop what a timed-out test left running. */
const leftovers = new Set<{ stop(): Promise<void> }>()

after(async () => {
  await Promise.all([...leftovers].map(p => p.stop().catch(() => undefined)))
})

describe('a KafkaSource through consumer-group churn', () => {
  for (const ordering of ['ordered', 'unordered'] as const) {
    it(`${ordering}: every offset of the topic reaches the sink through joins, scale steps to 1, 0 and back, and a SIGKILL`, async t => {
      await churn(t, ordering)
    })
  }
})

interface Placement {
  podName: string
  vreplicas: number
}

async function churn(t: TestContext, ordering: 'ordered' | 'unordered'): Promise<void> {
  const started = Date.now()
  const prefix = uniqueName(`churn-${ordering}`)
  const topic = `${prefix}-topic`
  const group = `${prefix}-group`
  await createTopic(topic, PARTITIONS)

  const sink = await startSink()
  leftovers.add(sink)
  const kafka = new Kafka({ clientId: prefix, brokers: brokers(), logLevel: logLevel.NOTHING })
  // Idempotent, acks=all, one send of many records: one large batch a partition, as real clients write them.
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 })
  await producer.connect()
  let produced = 0
  const produce = async (count: number) => {
    const messages = Array.from({ length: count }, (_, i) => ({ partition: (produced + i) % PARTITIONS, value: VALUE }))
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
      `${((Date.now() - started) / 1000).toFixed(1)} s ${what}: ${sink.seen.size}/${produced} delivered, ${sink.requests} requests`
    )

  try {
    await produce(BACKLOG)
    controller = await startControllerProcess(prefix, LIVENESS)
    leftovers.add(controller)
    const api = controller.url
    await startDispatcher('dispatcher-0', 'a')
    await startDispatcher('dispatcher-1', 'b')
    step('backlog produced, two dispatchers up')

    const created = await http(
      'POST',
      `${api}${KS}`,
      `apiVersion: sources.knative.dev/v1beta1\nkind: KafkaSource\nmetadata: {name: ${NAME}}\nspec:\n  bootstrapServers: [${brokers().join(',')}]\n  topics: [${topic}]\n  consumerGroup: ${group}\n  consumers: 3\n  initialOffset: earliest\n  ordering: ${ordering}\n  sink: {uri: "${sink.url}"}\n`
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
    await settled(api, group, topic, 1)
    step('consumers 1')

    await scaleKafkaSource(api, NAME, 0)
    await settled(api, group, topic, 0)
    // Nobody consumes now, so what the group committed must all be at the sink already.
    const committedAtZero = await committedOffsets(group, topic, PARTITIONS)
    const skipped = missing(sink.seen, committedAtZero)
    assert.equal(skipped.length, 0, `committed, never delivered (consumers 0): ${ranges(skipped)}`)
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
    const duplicates = sink.requests - sink.seen.size
    t.diagnostic(
      `${ordering}: ${produced} records in the topic, ${sink.seen.size} delivered, ${sink.requests} requests, duplicates ${duplicates} (${((100 * duplicates) / produced).toFixed(2)} %), lost ${lost.length}`
    )
    t.diagnostic(`delivered more than once: ${ranges(redelivered(sink.seen))}`)
    assert.equal(lost.length, 0, `lost: ${ranges(lost)}`)

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
  readonly requests: number
  stop(): Promise<void>
}

/** A sink that records every ce-id and answers 202 at once. */
async function startSink(): Promise<Sink> {
  const seen = new Map<string, number>()
  let requests = 0
  const server: Server = createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      const id = String(req.headers['ce-id'])
      seen.set(id, (seen.get(id) ?? 0) + 1)
      requests++
      res.writeHead(202).end()
    })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  let stopped: Promise<void> | undefined
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    seen,
    get requests() {
      return requests
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
