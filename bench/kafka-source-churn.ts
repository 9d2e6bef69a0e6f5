// KafkaSource through consumer-group churn (issue 12): is every record delivered, and once, while the group's
// members join, leave and scale? Counted against the topic itself — its offsets (ListOffsets, checked against
// the producer's acknowledged offsets) — not against Shoal's view: the sink logs every `ce-id`
// (`partition:P/offset:O`) and when it came.
//
// *churn* (issue 12, "Duplicates"): one broker, one `shoal controller`, three `shoal dispatcher` processes in
// zones a, b and c; a 12-partition topic holding 6,000 records of 200 B before the KafkaSource is created with
// `consumers: 2`, `initialOffset: earliest`; then every 3 s `shoal scale kafkasource … --consumers` 6, 1 and 4,
// each followed at once by 6,000 more records (24,000 in all). One run per sink delay (202 after D ms) and
// ordering. Per run: requests at the sink, distinct, duplicates, lost (offsets of the topic never received), and
// per step the delivery gap — the longest time without a request at the sink, from the step to the next step
// (or the end) — and the stall: the longest such time while acknowledged records were still waiting, so an idle
// sink with nothing left to deliver does not count. A 3 s sink cannot drain 24,000 records within the time limit
// (ordered: one request in flight per partition, 4 records/s; unordered: about 128 requests on the wire per
// dispatcher, ~100/s): its "lost" are mostly records not delivered yet — "committed past" are the real losses.
//
// *backlog-join* (issue 12, "Loss"): two dispatchers (`--capacity 10`, zones a, b), a 6-partition topic, 5,000
// records of 1 KiB produced in one send (one batch of ~850 KB per partition) right before a source with
// `consumers: 3` is applied; the sink answers at once. Lost and duplicates per partition.
//
// Producers batch as real clients do: one send() of all of a step's records, so one large batch per partition.
// A run stops once every offset is received, or when Kafka's committed offsets have reached the log end on every
// partition and the sink has had nothing for --quiet-s (what is missing then is never coming), or at the time
// limit (--limit-s after the last step: 60 s for a sink faster than 1 s, else 120 s).
//
//   npm run bench:kafka-source-churn [-- --scenario churn|backlog-join|both --sinks 10,3000
//     --orderings ordered,unordered --rounds 1 --limit-s N --quiet-s 20 --backlog-produce before|after
//     --step-records 6000 --sink node|python]
//
// --sink python: the sink is test/sinks/python_sink.py (the CloudEvents SDK over Python's ThreadingHTTPServer,
// listen backlog 5) instead of a Node server with a large backlog.
import { execFile } from 'node:child_process'
import { parseArgs, promisify } from 'node:util'
import { Admin, Producer } from '@platformatic/kafka'
import { ensureTopics } from '../src/kafka/index.ts'
import {
  deleteTopic,
  machine,
  sinkKindOf,
  sleep,
  startKafka,
  startShoalCluster,
  startSink
} from './kafka-source-harness.ts'
import type { DispatcherSpec, Shoal, Sink } from './kafka-source-harness.ts'

type Ordering = 'ordered' | 'unordered'
type Scenario = 'churn' | 'backlog-join'

const { values } = parseArgs({
  options: {
    scenario: { type: 'string', default: 'both' },
    sinks: { type: 'string', default: '10,3000' },
    orderings: { type: 'string', default: 'ordered,unordered' },
    rounds: { type: 'string', default: '1' },
    /** Seconds after the last step (churn) or the apply (backlog-join) before giving up. */
    'limit-s': { type: 'string' },
    /** Stop this long after the last request once the group has committed the log end everywhere; 0: never. */
    'quiet-s': { type: 'string', default: '20' },
    'backlog-produce': { type: 'string', default: 'before' },
    /** churn: records produced before the create and after each step. */
    'step-records': { type: 'string', default: '6000' },
    sink: { type: 'string', default: 'node' }
  }
})
const sinkKind = sinkKindOf(values.sink)
const scenarios: Scenario[] = values.scenario === 'both' ? ['churn', 'backlog-join'] : [values.scenario as Scenario]
if (!scenarios.every(s => s === 'churn' || s === 'backlog-join')) throw new Error(`--scenario ${values.scenario}?`)
const sinkDelays = values.sinks.split(',').map(Number)
const orderings = values.orderings.split(',') as Ordering[]
if (!orderings.every(o => o === 'ordered' || o === 'unordered')) throw new Error(`--orderings ${values.orderings}?`)
const rounds = Number(values.rounds)
const quietMs = Number(values['quiet-s']) * 1000
if (values['backlog-produce'] !== 'before' && values['backlog-produce'] !== 'after') {
  throw new Error(`--backlog-produce ${values['backlog-produce']}?`)
}
const backlogAfter = values['backlog-produce'] === 'after'

/** The churn scenario: records before the source, then each step's consumers, 3 s apart, records after each. */
const CHURN = {
  partitions: 12,
  recordBytes: 200,
  recordsPerStep: Number(values['step-records']),
  initialConsumers: 2,
  steps: [6, 1, 4],
  stepMs: 3_000,
  dispatchers: ['a', 'b', 'c'].map(zone => ({ zone, capacity: 10 }))
} as const
const BACKLOG = {
  partitions: 6,
  recordBytes: 1024,
  records: 5_000,
  consumers: 3,
  dispatchers: ['a', 'b'].map(zone => ({ zone, capacity: 10 }))
} as const

const bin = new URL('../bin/shoal.js', import.meta.url).pathname
const run = promisify(execFile)
const fmt = (n: number) => Math.round(n).toLocaleString('en-US')
const log = (line: string) => process.stderr.write(`${line}\n`)
const secs = (ms: number) => `${(ms / 1000).toFixed(1)} s`
/** Milliseconds since the epoch, on the same clock as the sink's arrival times. */
const now = () => performance.timeOrigin + performance.now()

/** One scale step (the first is the create): when it began, relative to nothing (epoch ms). */
interface Step {
  readonly consumers: number
  readonly at: number
  /** How long the create (POST) or `shoal scale` took. */
  tookMs: number
  /** The group's members and how many partitions each held just before the next step (or at the end). */
  members: string
}

/** A partition's offsets by the topic, what reached the sink, and what the group committed. */
interface PartitionResult {
  readonly partition: number
  readonly start: number
  readonly end: number
  readonly requests: number
  readonly distinct: number
  readonly lost: number
  /** Lost offsets below the group's committed offset: committed, never delivered. */
  readonly skipped: number
  readonly lostRanges: string
  readonly committed: number
}

interface StepResult {
  readonly consumers: number
  /** Seconds from the create. */
  readonly fromS: number
  /** Seconds the create or `shoal scale` took. */
  readonly tookS: number
  readonly requests: number
  readonly newDistinct: number
  readonly duplicates: number
  /** The longest time without a request at the sink in the step, and when it began (seconds from the step). */
  readonly gapS: number
  readonly gapFromS: number
  /** The longest such time while records were waiting (acknowledged, not yet at the sink), and when it began. */
  readonly stallS: number
  readonly stallFromS: number
  readonly members: string
}

interface RunResult {
  readonly scenario: Scenario
  readonly sinkDelayMs: number
  readonly ordering: Ordering
  readonly round: number
  readonly produced: number
  readonly requests: number
  readonly distinct: number
  readonly duplicates: number
  readonly lost: number
  readonly skipped: number
  /** Why the run stopped. */
  readonly stop: 'all received' | 'settled' | 'time limit'
  /** Seconds from the create to the last new record (or the stop). */
  readonly durationS: number
  /** Seconds from the create to the first request at the sink. */
  readonly firstS: number
  /** Wall-clock seconds for the whole run, set-up and clean-up included. */
  readonly wallS: number
  /** Whether the producer's acknowledged offsets are exactly the topic's [earliest, latest). */
  readonly truthAgrees: boolean
  readonly partitions: readonly PartitionResult[]
  readonly steps: readonly StepResult[]
}

const kafka = await startKafka()
const admin = new Admin({ clientId: 'bench-churn-admin', bootstrapBrokers: kafka.brokers })
const results: RunResult[] = []
const benchStarted = performance.now()
try {
  // Wall time per run, set-up and shutdown included.
  const timed = async (one: () => Promise<Omit<RunResult, 'wallS'>>) => {
    const started = performance.now()
    const result = await one()
    const wallS = (performance.now() - started) / 1000
    log(`  (run took ${wallS.toFixed(0)} s)`)
    results.push({ ...result, wallS })
  }
  for (let round = 1; round <= rounds; round++) {
    if (scenarios.includes('churn')) {
      for (const delay of sinkDelays) {
        for (const ordering of orderings) await timed(() => churn(delay, ordering, round))
      }
    }
    if (scenarios.includes('backlog-join')) {
      for (const ordering of orderings) await timed(() => backlogJoin(ordering, round))
    }
  }
} finally {
  await admin.close()
  await kafka.stop()
}
report()

/** What the producer had acknowledged: ranges per partition, [base, base + count), and each send's time. */
interface Acked {
  readonly ranges: Map<number, { from: number; to: number }[]>
  readonly sends: { at: number; count: number }[]
}

/** One send() of `count` records of `bytes`, round-robin over the partitions from record `first` on. */
async function produce(
  producer: Producer,
  topic: string,
  partitions: number,
  count: number,
  bytes: number,
  first: number,
  acked: Acked
): Promise<void> {
  const perPartition = new Map<number, number>()
  const messages = Array.from({ length: count }, (_, i) => {
    const n = first + i
    const partition = n % partitions
    perPartition.set(partition, (perPartition.get(partition) ?? 0) + 1)
    const value = Buffer.alloc(bytes, n & 0xff)
    value.writeUInt32BE(n, 0)
    return { topic, partition, key: Buffer.from(`k${n}`), value }
  })
  // The client ignores the constructor's acks: every send says it.
  const result = await producer.send({ acks: -1, messages })
  acked.sends.push({ at: now(), count })
  for (const o of result.offsets ?? []) {
    const from = Number(o.offset)
    const ranges = acked.ranges.get(o.partition) ?? []
    ranges.push({ from, to: from + (perPartition.get(o.partition) ?? 0) })
    acked.ranges.set(o.partition, ranges)
  }
}

/** The topic's [earliest, latest) per partition, by ListOffsets. */
async function topicOffsets(topic: string, partitions: number): Promise<Map<number, { start: number; end: number }>> {
  const ask = (timestamp: bigint) =>
    admin.listOffsets({
      topics: [
        { name: topic, partitions: Array.from({ length: partitions }, (_, p) => ({ partitionIndex: p, timestamp })) }
      ]
    })
  const [earliest, latest] = await Promise.all([ask(-2n), ask(-1n)])
  const out = new Map<number, { start: number; end: number }>()
  for (const p of earliest[0]?.partitions ?? []) out.set(p.partitionIndex, { start: Number(p.offset), end: 0 })
  for (const p of latest[0]?.partitions ?? []) out.get(p.partitionIndex)!.end = Number(p.offset)
  return out
}

/** Whether the acknowledged ranges cover exactly [start, end) of every partition, without overlap. */
function agrees(acked: Acked, truth: Map<number, { start: number; end: number }>): boolean {
  for (const [partition, { start, end }] of truth) {
    const ranges = [...(acked.ranges.get(partition) ?? [])].sort((a, b) => a.from - b.from)
    let at = start
    for (const r of ranges) {
      if (r.from !== at) return false
      at = r.to
    }
    if (at !== end) return false
  }
  return true
}

/** The group's committed offset per partition (-1: none). */
async function committedOffsets(group: string): Promise<Map<number, number>> {
  const listed = await admin.listConsumerGroupOffsets({ groups: [group] })
  const out = new Map<number, number>()
  for (const t of listed[0]?.topics ?? [])
    for (const p of t.partitions) out.set(p.partitionIndex, Number(p.committedOffset))
  return out
}

/** The group's members and the partitions each holds, e.g. "3: 4,4,4"; flags a member that holds none. */
async function members(group: string): Promise<string> {
  try {
    const described = (await admin.describeGroups({ groups: [group] })).get(group)
    if (described === undefined || described.members.size === 0) return `0 (${described?.state ?? 'no group'})`
    const held = [...described.members.values()]
      .map(m => [...(m.assignments?.values() ?? [])].reduce((n, a) => n + a.partitions.length, 0))
      .sort((a, b) => b - a)
    if (described.state.toLowerCase() !== 'stable') return `${held.length} (${described.state.toLowerCase()})`
    return `${held.length}: ${held.join(',')}${held.includes(0) ? ' (**a member holds none**)' : ''}`
  } catch (error) {
    return `? (${(error as Error).message})`
  }
}

async function scale(api: string, name: string, consumers: number): Promise<void> {
  await run(process.execPath, [bin, 'scale', 'kafkasource', name, '--consumers', String(consumers), '--server', api])
}

/** A fresh topic, sink and Shoal for one run; `body` applies and drives the source; then the count. */
async function oneRun(
  setup: {
    scenario: Scenario
    sinkDelayMs: number
    ordering: Ordering
    round: number
    partitions: number
    dispatchers: readonly DispatcherSpec[]
    limitAfterLastStepMs: number
  },
  body: (ctx: {
    shoal: Shoal
    sink: Sink
    topic: string
    name: string
    group: string
    producer: Producer
    acked: Acked
    steps: Step[]
  }) => Promise<void>
): Promise<Omit<RunResult, 'wallS'>> {
  const tag = `${setup.scenario}-${setup.ordering}-${setup.sinkDelayMs}-${setup.round}-${process.pid}`
  const topic = `bench-churn-${tag}`
  const name = setup.scenario === 'churn' ? 'churn-src' : 'backlog-src'
  const group = `bench-churn-group-${tag}`
  const label = `${setup.scenario}, sink ${setup.sinkDelayMs} ms, ${setup.ordering}, round ${setup.round}`
  log(`${label}: starting`)
  await ensureTopics({ brokers: kafka.brokers, clientId: 'bench' }, [
    { name: topic, partitions: setup.partitions, configs: {} }
  ])
  const sink = await startSink({ kind: sinkKind, delayMs: setup.sinkDelayMs, countIds: true, logIds: true })
  const producer = new Producer({ clientId: 'bench-churn-producer', bootstrapBrokers: kafka.brokers, idempotent: true })
  const acked: Acked = { ranges: new Map(), sends: [] }
  const steps: Step[] = []
  let shoal: Shoal | undefined
  try {
    shoal = await startShoalCluster(kafka.brokers, `bench-churn-${tag}`, setup.dispatchers)
    await body({ shoal, sink, topic, name, group, producer, acked, steps })
    const produced = [...acked.ranges.values()].flat().reduce((n, r) => n + r.to - r.from, 0)
    const created = steps[0]!.at
    const deadline = steps.at(-1)!.at + setup.limitAfterLastStepMs
    // Wait for every offset, a settled group, or the time limit.
    let stop: RunResult['stop'] = 'time limit'
    let lastSettleCheck = 0
    for (;;) {
      const stats = await sink.stats()
      if (stats.unique >= produced) {
        stop = 'all received'
        break
      }
      if (now() > deadline) break
      const quietFor = stats.count === 0 ? now() - created : stats.sinceFirstMs - stats.spanMs
      if (quietMs > 0 && quietFor >= quietMs && now() - lastSettleCheck > 1_000) {
        lastSettleCheck = now()
        const committed = await committedOffsets(group)
        const ends = await topicOffsets(topic, setup.partitions)
        if ([...ends].every(([p, { end }]) => (committed.get(p) ?? -1) >= end)) {
          stop = 'settled'
          break
        }
      }
      await sleep(250)
    }
    const stoppedAt = now()
    steps.at(-1)!.members = await members(group)
    // Requests still on their way (a redelivery after the last record) count too.
    if (stop === 'all received') await sleep(setup.sinkDelayMs + 2_000)
    const deliveries = await sink.deliveries()
    const committed = await committedOffsets(group)
    const truth = await topicOffsets(topic, setup.partitions)
    const result = count({
      setup,
      produced,
      deliveries,
      committed,
      truth,
      steps,
      stop,
      stoppedAt,
      truthAgrees: agrees(acked, truth),
      sends: acked.sends
    })
    log(
      `${label}: ${fmt(result.requests)} requests, ${fmt(result.distinct)} distinct of ${fmt(produced)}, ` +
        `${fmt(result.duplicates)} duplicates, ${fmt(result.lost)} lost (${fmt(result.skipped)} committed past); ` +
        `${result.stop} after ${result.durationS.toFixed(1)} s`
    )
    return result
  } finally {
    await shoal?.stop()
    await producer.close()
    await sink.stop()
    await deleteTopic(kafka.brokers, topic)
  }
}

function churn(sinkDelayMs: number, ordering: Ordering, round: number): Promise<Omit<RunResult, 'wallS'>> {
  const limitS = values['limit-s'] === undefined ? (sinkDelayMs < 1_000 ? 60 : 120) : Number(values['limit-s'])
  const { partitions, recordBytes, recordsPerStep } = CHURN
  return oneRun(
    {
      scenario: 'churn',
      sinkDelayMs,
      ordering,
      round,
      partitions,
      dispatchers: CHURN.dispatchers,
      limitAfterLastStepMs: limitS * 1000
    },
    async ({ shoal, sink, topic, name, group, producer, acked, steps }) => {
      let produced = 0
      await produce(producer, topic, partitions, recordsPerStep, recordBytes, produced, acked)
      produced += recordsPerStep
      const created = now()
      steps.push({ consumers: CHURN.initialConsumers, at: created, tookMs: 0, members: '' })
      await shoal.createSource({
        name,
        topic,
        sink: sink.url,
        consumers: CHURN.initialConsumers,
        ordering,
        consumerGroup: group
      })
      steps.at(-1)!.tookMs = now() - created
      for (const [i, consumers] of CHURN.steps.entries()) {
        await sleep(Math.max(0, created + (i + 1) * CHURN.stepMs - now()))
        steps.at(-1)!.members = await members(group)
        const at = now()
        steps.push({ consumers, at, tookMs: 0, members: '' })
        await scale(shoal.api, name, consumers)
        steps.at(-1)!.tookMs = now() - at
        await produce(producer, topic, partitions, recordsPerStep, recordBytes, produced, acked)
        produced += recordsPerStep
      }
    }
  )
}

function backlogJoin(ordering: Ordering, round: number): Promise<Omit<RunResult, 'wallS'>> {
  const limitS = values['limit-s'] === undefined ? 60 : Number(values['limit-s'])
  const { partitions, recordBytes, records } = BACKLOG
  return oneRun(
    {
      scenario: 'backlog-join',
      sinkDelayMs: 0,
      ordering,
      round,
      partitions,
      dispatchers: BACKLOG.dispatchers,
      limitAfterLastStepMs: limitS * 1000
    },
    async ({ shoal, sink, topic, name, group, producer, acked, steps }) => {
      if (!backlogAfter) await produce(producer, topic, partitions, records, recordBytes, 0, acked)
      steps.push({ consumers: BACKLOG.consumers, at: now(), tookMs: 0, members: '' })
      await shoal.createSource({
        name,
        topic,
        sink: sink.url,
        consumers: BACKLOG.consumers,
        ordering,
        consumerGroup: group
      })
      if (backlogAfter) await produce(producer, topic, partitions, records, recordBytes, 0, acked)
    }
  )
}

/** Compact offset ranges, e.g. "0–833, 900" (at most a few shown). */
function ranges(offsets: readonly number[]): string {
  const out: string[] = []
  for (let i = 0; i < offsets.length;) {
    let j = i
    while (j + 1 < offsets.length && offsets[j + 1] === offsets[j]! + 1) j++
    out.push(i === j ? `${offsets[i]}` : `${offsets[i]}–${offsets[j]}`)
    i = j + 1
  }
  return out.length > 4 ? `${out.slice(0, 4).join(', ')}, … (${out.length} ranges)` : out.join(', ')
}

/** A request at the sink (count 0, `fresh` when its id is new) or an acknowledged send of `count` records. */
interface Event {
  readonly at: number
  readonly fresh: boolean
  readonly count: number
}

/**
 * The longest time in [from, to) without a request at the sink while records the producer had acknowledged were
 * still waiting to reach it for the first time: a stall, unlike a gap with nothing left to deliver.
 */
function longestStall(events: readonly Event[], from: number, to: number): { ms: number; from: number } {
  let pending = 0
  let mark = from
  let best = { ms: 0, from }
  for (const e of events) {
    if (e.at >= to) break
    if (e.count > 0) {
      if (pending <= 0 && e.at >= from) mark = e.at
      pending += e.count
      continue
    }
    if (e.at >= from) {
      if (pending > 0 && e.at - mark > best.ms) best = { ms: e.at - mark, from: mark }
      mark = e.at
    }
    if (e.fresh) pending--
  }
  if (pending > 0 && to - mark > best.ms) best = { ms: to - mark, from: mark }
  return best
}

function count(input: {
  setup: { scenario: Scenario; sinkDelayMs: number; ordering: Ordering; round: number }
  produced: number
  deliveries: { ids: readonly string[]; at: readonly number[] }
  committed: Map<number, number>
  truth: Map<number, { start: number; end: number }>
  steps: readonly Step[]
  stop: RunResult['stop']
  stoppedAt: number
  truthAgrees: boolean
  sends: readonly { at: number; count: number }[]
}): Omit<RunResult, 'wallS'> {
  const { deliveries, steps } = input
  const created = steps[0]!.at
  const seen = new Set<string>()
  /** Per request: arrival time, and whether its id was new. */
  const arrivals: { at: number; fresh: boolean }[] = []
  const perPartition = new Map<number, { requests: number; offsets: Set<number> }>()
  let lastFresh = created
  deliveries.ids.forEach((id, i) => {
    const at = deliveries.at[i]!
    const fresh = !seen.has(id)
    seen.add(id)
    arrivals.push({ at, fresh })
    if (fresh) lastFresh = Math.max(lastFresh, at)
    const match = /^partition:(\d+)\/offset:(\d+)$/.exec(id)
    if (match === null) return
    const p = perPartition.get(Number(match[1])) ?? { requests: 0, offsets: new Set<number>() }
    p.requests++
    p.offsets.add(Number(match[2]))
    perPartition.set(Number(match[1]), p)
  })
  arrivals.sort((a, b) => a.at - b.at)
  const events: Event[] = [
    ...arrivals.map(a => ({ at: a.at, fresh: a.fresh, count: 0 })),
    ...input.sends.map(s => ({ at: s.at, fresh: false, count: s.count }))
  ].sort((a, b) => a.at - b.at)
  const endAt = input.stop === 'all received' ? lastFresh : input.stoppedAt

  const partitions: PartitionResult[] = [...input.truth]
    .sort(([a], [b]) => a - b)
    .map(([partition, { start, end }]) => {
      const got = perPartition.get(partition)
      const committed = input.committed.get(partition) ?? -1
      const missing: number[] = []
      for (let o = start; o < end; o++) if (!got?.offsets.has(o)) missing.push(o)
      return {
        partition,
        start,
        end,
        requests: got?.requests ?? 0,
        distinct: got?.offsets.size ?? 0,
        lost: missing.length,
        skipped: missing.filter(o => o < committed).length,
        lostRanges: ranges(missing),
        committed
      }
    })

  const stepResults: StepResult[] = steps.map((step, i) => {
    const from = step.at
    const to = Math.max(from, steps[i + 1]?.at ?? endAt)
    const inStep = arrivals.filter(a => a.at >= from && a.at < to)
    let gap = 0
    let gapFrom = from
    let previous = from
    for (const t of [...inStep.map(a => a.at), to]) {
      if (t - previous > gap) {
        gap = t - previous
        gapFrom = previous
      }
      previous = t
    }
    const newDistinct = inStep.filter(a => a.fresh).length
    const stall = longestStall(events, from, to)
    return {
      consumers: step.consumers,
      fromS: (from - created) / 1000,
      tookS: step.tookMs / 1000,
      requests: inStep.length,
      newDistinct,
      duplicates: inStep.length - newDistinct,
      gapS: gap / 1000,
      gapFromS: (gapFrom - from) / 1000,
      stallS: stall.ms / 1000,
      stallFromS: (stall.from - from) / 1000,
      members: step.members
    }
  })
  const distinct = partitions.reduce((n, p) => n + p.distinct, 0)
  const requests = deliveries.ids.length
  return {
    scenario: input.setup.scenario,
    sinkDelayMs: input.setup.sinkDelayMs,
    ordering: input.setup.ordering,
    round: input.setup.round,
    produced: input.produced,
    requests,
    distinct,
    duplicates: requests - distinct,
    lost: partitions.reduce((n, p) => n + p.lost, 0),
    skipped: partitions.reduce((n, p) => n + p.skipped, 0),
    stop: input.stop,
    durationS: (endAt - created) / 1000,
    firstS: arrivals.length > 0 ? (arrivals[0]!.at - created) / 1000 : NaN,
    truthAgrees: input.truthAgrees,
    partitions,
    steps: stepResults
  }
}

function report(): void {
  const pct = (n: number, of: number) => `${((100 * n) / of).toFixed(2)} %`
  const lines: string[] = [
    `${machine()}; one embedded broker; ${sinkKind} sink; wall time ${secs(performance.now() - benchStarted)}`,
    ''
  ]
  const churnRuns = results.filter(r => r.scenario === 'churn')
  if (churnRuns.length > 0) {
    lines.push(
      `**churn**: ${CHURN.partitions} partitions, ${fmt(CHURN.recordsPerStep)} records of ${CHURN.recordBytes} B ` +
        `before the create (consumers ${CHURN.initialConsumers}) and after each step ` +
        `(every ${CHURN.stepMs / 1000} s: consumers ${CHURN.steps.join(', ')}), three dispatchers (zones a, b, c, ` +
        'capacity 10). Lost: offsets of the topic never received (committed past: below the offset the group ' +
        'committed, so never coming).',
      '',
      '| sink | ordering | round | produced | requests at the sink | distinct | duplicates | duplicates % | lost | of which committed past | first request | stopped | run took |',
      '|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|'
    )
    for (const r of churnRuns) {
      lines.push(
        `| ${fmt(r.sinkDelayMs)} ms | ${r.ordering} | ${r.round} | ${fmt(r.produced)} | ${fmt(r.requests)} | ` +
          `${fmt(r.distinct)} | ${fmt(r.duplicates)} | ${pct(r.duplicates, r.produced)} | ${fmt(r.lost)} | ` +
          `${fmt(r.skipped)} | ${r.firstS.toFixed(1)} s | ${r.stop} at ${r.durationS.toFixed(1)} s | ${r.wallS.toFixed(0)} s |`
      )
    }
    lines.push(
      '',
      'Per step: requests at the sink from the step to the next (or the end); the longest time without one (from ' +
        'when, after the step); the longest such time while acknowledged records were still waiting for their first ' +
        'delivery (a stall, not an idle sink); members: partitions per member of the group just before the next ' +
        'step (or at the end).',
      '',
      '| sink | ordering | round | step | at | requests | new | duplicates | longest gap | longest stall | members |',
      '|---:|---|---:|---|---:|---:|---:|---:|---:|---:|---|'
    )
    for (const r of churnRuns) {
      for (const [i, s] of r.steps.entries()) {
        const what = i === 0 ? `create, ${s.consumers}` : `→ ${s.consumers}`
        lines.push(
          `| ${fmt(r.sinkDelayMs)} ms | ${r.ordering} | ${r.round} | ${what} | ${s.fromS.toFixed(1)} s (took ${s.tookS.toFixed(1)} s) | ` +
            `${fmt(s.requests)} | ${fmt(s.newDistinct)} | ${fmt(s.duplicates)} | ` +
            `**${s.gapS.toFixed(1)} s** (at +${s.gapFromS.toFixed(1)} s) | ` +
            `${s.stallS.toFixed(1)} s (at +${s.stallFromS.toFixed(1)} s) | ${s.members} |`
        )
      }
    }
    lines.push('')
  }
  const backlogRuns = results.filter(r => r.scenario === 'backlog-join')
  if (backlogRuns.length > 0) {
    lines.push(
      `**backlog-join**: ${BACKLOG.partitions} partitions, ${fmt(BACKLOG.records)} records of ${BACKLOG.recordBytes} B ` +
        `in one send ${backlogAfter ? 'right after' : 'right before'} the source is applied (consumers ` +
        `${BACKLOG.consumers}), two dispatchers (zones a, b, capacity 10), sink answers at once.`,
      '',
      '| ordering | round | produced | requests | distinct | duplicates | lost | of which committed past | stopped | members at the end | run took |',
      '|---|---:|---:|---:|---:|---:|---:|---:|---|---|---:|'
    )
    for (const r of backlogRuns) {
      lines.push(
        `| ${r.ordering} | ${r.round} | ${fmt(r.produced)} | ${fmt(r.requests)} | ${fmt(r.distinct)} | ` +
          `${fmt(r.duplicates)} | ${fmt(r.lost)} | ${fmt(r.skipped)} | ${r.stop} at ${r.durationS.toFixed(1)} s | ` +
          `${r.steps[0]!.members} | ${r.wallS.toFixed(0)} s |`
      )
    }
    lines.push(
      '',
      '| ordering | round | partition | offsets | requests | distinct | duplicates | lost | lost offsets | committed |',
      '|---|---:|---:|---|---:|---:|---:|---:|---|---:|'
    )
    for (const r of backlogRuns) {
      for (const p of r.partitions) {
        lines.push(
          `| ${r.ordering} | ${r.round} | ${p.partition} | ${p.start}–${p.end - 1} | ${fmt(p.requests)} | ` +
            `${fmt(p.distinct)} | ${fmt(p.requests - p.distinct)} | ${fmt(p.lost)} | ${p.lostRanges || '–'} | ` +
            `${p.committed} |`
        )
      }
    }
    lines.push('')
  }
  const disagreeing = results.filter(r => !r.truthAgrees)
  if (disagreeing.length > 0) {
    lines.push(`**The producer's acknowledged offsets differ from ListOffsets in ${disagreeing.length} run(s).**`, '')
  }
  console.log(`\n${lines.join('\n')}`)
  console.log(JSON.stringify({ bench: 'kafka-source-churn', machine: machine(), sink: sinkKind, runs: results }))
}
