// What the lab drills share beyond test/faults/harness.ts (whose producer, sinks and counting they use): the
// lab and its brokers, a pool of Shoal processes on the lab's hosts, sinks on the sink host's address, Kafka's
// view of partitions (kafka-topics --describe style) and of consumer groups (to count rebalances), and the
// drill's timings, written beside its counts to the summary table.
import assert from 'node:assert/strict'
import { appendFileSync } from 'node:fs'
import { join } from 'node:path'
import { Admin } from '@platformatic/kafka'
import { spawn } from 'node:child_process'
import { replicas } from '../helpers/controllers.ts'
import type { Replica } from '../helpers/controllers.ts'
import { http } from '../helpers/http.ts'
import { brokers, uniqueName } from '../helpers/kafka.ts'
import { captureOutput, shoalBin } from '../helpers/processes.ts'
import { eventually } from '../helpers/wait.ts'
import { CountingSink, metricSum, sleep } from '../faults/harness.ts'
import { TickSink } from '../helpers/ticks.ts'
import { ensureTopics } from '../../src/kafka/index.ts'
import type { AnswerLog, IdProducer } from '../faults/harness.ts'
import { labFromEnv } from './lab.ts'
import { hostOf, hostsOf } from './net.ts'
import type { LabDescription, LabHost } from './net.ts'
import { startLabController, startLabDispatcher } from './shoal.ts'
import type { LabController, LabDispatcher } from './shoal.ts'

export const DISPATCHERS = '/apis/shoal.dev/v1alpha1/dispatchers'
/** Every controller and dispatcher of a drill: dead after 6 s of silence, self-fenced after 3 s (as test/faults). */
export const LIVENESS = ['--liveness-timeout', '6s']
/** Buckets of a drill's store (test/lab/shoal.ts starts every controller with --buckets 4). */
const BUCKETS = 4

let cached: LabDescription | undefined
/** The lab the drills run in. */
export function lab(): LabDescription {
  cached ??= labFromEnv()
  return cached
}

/** The sink host: the drills run here, and their sinks listen on its address. */
export function sinkHost(): LabHost {
  return hostOf(lab(), 'sink')
}

/** A broker as test/lab/setup.ts started it. */
export interface BrokerInfo {
  readonly nodeId: number
  readonly host: string
  readonly rack: string
  readonly address: string
}

export function labBrokers(): BrokerInfo[] {
  const value = process.env.SHOAL_LAB_BROKERS
  if (!value) throw new Error('SHOAL_LAB_BROKERS is not set: run the lab drills with `npm run test:lab`')
  return JSON.parse(value) as BrokerInfo[]
}

/**
 * The bootstrap list of the brokers outside a zone, for the drill's own clients (producer, admin) while the
 * zone is cut: the sink host still reaches the cut zone's broker, which, cut from the KRaft quorum, goes on
 * answering metadata that is no longer true (itself as leader), and a client bootstrapping from it follows that.
 */
export function brokersOutside(zone: string): string {
  return labBrokers()
    .filter(b => b.rack !== zone)
    .map(b => b.address)
    .join(',')
}

/** Seconds with one decimal, from milliseconds. */
export function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`
}

// ---- a drill's start ----

/** What every drill starts with: its prefix, its topic (made), and a counting sink and a tick sink on the sink host. */
export async function startDrill(
  name: string,
  partitions: number
): Promise<{ started: number; prefix: string; topic: string; sink: CountingSink; pingSink: TickSink }> {
  const started = Date.now()
  const prefix = uniqueName(name)
  const topic = `${prefix}-topic`
  await ensureTopics({ brokers: brokers(), clientId: 'drill' }, [{ name: topic, partitions, configs: {} }])
  const sink = await new CountingSink().start(sinkHost().address)
  const pingSink = await new TickSink().start(sinkHost().address)
  return { started, prefix, topic, sink, pingSink }
}

// ---- records ----

/**
 * Produces ids with the drill's IdProducer (acks=all, a failed send sent again) in sends of `batch`, `pauseMs`
 * apart, until stop(): a stream of unknown length that a fault can hit at any moment.
 */
export class Stream {
  readonly #producer: IdProducer
  readonly #done: Promise<void>
  #stopped = false

  constructor(producer: IdProducer, batch = 50, pauseMs = 100) {
    this.#producer = producer
    this.#done = (async () => {
      while (!this.#stopped) {
        await producer.produce(batch, batch)
        await sleep(pauseMs)
      }
    })()
  }

  /** Ids acknowledged so far. */
  get produced(): number {
    return this.#producer.produced.size
  }

  /** Stops after the send in flight; resolves once it is acknowledged, or after 30 s (the drill then fails). */
  async stop(): Promise<void> {
    this.#stopped = true
    let timer: NodeJS.Timeout | undefined
    await Promise.race([this.#done, new Promise(resolve => (timer = setTimeout(resolve, 30_000)))])
    clearTimeout(timer)
  }
}

/** A drill's source by name, and the sink that counts what it delivered. */
export interface DrillSource {
  readonly name: string
  readonly sink: { ids(source: string): ReadonlySet<string> }
}

/** A gap in a partition's deliveries this long, with records flowing, is a stall (the drill's stream sends every 0.2 s). */
const STALL_MS = 2_000

/**
 * When delivery last resumed after a stall, per source: the end of the last gap of more than STALL_MS between two
 * answers of one partition, from `from` to `to` (a partition still silent at `to` counts as resumed then). The
 * "delivering" figures take each partition's first record past the fault; this one also sees a partition that
 * stalled again later, in a second rebalance or a hand-over that waited.
 */
export function lastStallEnd(
  sources: ReadonlyArray<{ readonly name: string; readonly sink: Pick<AnswerLog, 'partitionAnswers'> }>,
  partitions: number,
  from: number,
  to: number
): number[] {
  return sources.map(source => {
    let last = from
    for (let partition = 0; partition < partitions; partition++) {
      const times = (source.sink.partitionAnswers.get(`${source.name}|${partition}`) ?? [])
        .map(([at]) => at)
        .filter(at => at > from && at < to)
        .sort((a, b) => a - b)
      let previous = from
      for (const at of [...times, to]) {
        if (at - previous > STALL_MS) last = Math.max(last, at)
        previous = at
      }
    }
    return last
  })
}

/** How many of the ids acknowledged so far each source has not delivered yet: `name n, …`. */
export function backlogNote(sources: readonly DrillSource[], produced: number): string {
  return sources.map(s => `${s.name} ${produced - s.sink.ids(s.name).size}`).join(', ')
}

/**
 * Waits until every source has delivered, on every partition, an id numbered at least `from`: when the last one did
 * (ms), and when each did, in the sources' order.
 */
export async function everySourcePast(
  sources: readonly DrillSource[],
  partitions: number,
  from: number
): Promise<{ at: number; each: number[] }> {
  const each = new Map<string, number>()
  const at = await eventually(
    async () => {
      for (const s of sources) {
        if (!each.has(s.name) && everyPartitionPast(s.sink.ids(s.name), partitions, from)) each.set(s.name, Date.now())
      }
      return each.size === sources.length ? Date.now() : undefined
    },
    120_000,
    'every partition delivered again, to every source'
  )
  return { at, each: sources.map(s => each.get(s.name)!) }
}

/**
 * True when, for every partition of the topic, an id numbered at least `from` (`<drill>-<n>`, written to
 * partition n mod partitions by IdProducer) reached the source: every partition is being delivered.
 */
export function everyPartitionPast(ids: ReadonlySet<string>, partitions: number, from: number): boolean {
  const seen = new Set<number>()
  for (const id of ids) {
    const n = Number(id.slice(id.lastIndexOf('-') + 1))
    if (n >= from) seen.add(n % partitions)
    if (seen.size === partitions) return true
  }
  return false
}

// ---- a pool of Shoal processes ----

export interface Pool {
  readonly controllers: LabController[]
  readonly dispatchers: LabDispatcher[]
  /**
   * Stops controllers (SIGTERM: each leaves the group at once), awaits `whileStopped`, and starts each again on its
   * host, in its place.
   */
  restart(stopping: readonly LabController[], whileStopped: () => Promise<unknown>): Promise<void>
  /** Every process, stopped (SIGTERM; a paused one is continued first). */
  stop(): Promise<void>
}

/**
 * Starts a controller on each controller host (all three zones) and a dispatcher on each dispatcher host, the
 * dispatchers named after their hosts, with the drills' liveness timeout. Waits for every controller to be in
 * the group. On a failure part-way, stops what started.
 */
export async function startPool(
  prefix: string,
  options: {
    readonly capacity?: number
    readonly controllers?: number
    /** Default info: each process's log goes to `<lab dir>/logs/<prefix>/<host>.log`. */
    readonly logLevel?: string
    readonly controllerArgs?: readonly string[]
  } = {}
): Promise<Pool> {
  const controllers: LabController[] = []
  const dispatchers: LabDispatcher[] = []
  const logs = (host: LabHost) => ({
    logLevel: options.logLevel ?? 'info',
    logFile: join(lab().dir, 'logs', prefix, `${host.name}.log`)
  })
  const startController = (h: LabHost) =>
    startLabController(h, brokers().join(','), prefix, [...LIVENESS, ...(options.controllerArgs ?? [])], logs(h))
  const pool: Pool = {
    controllers,
    dispatchers,
    async restart(stopping, whileStopped) {
      await Promise.all(stopping.map(c => c.stop()))
      await whileStopped()
      for (const controller of stopping) {
        controllers[controllers.indexOf(controller)] = await startController(controller.host)
      }
    },
    async stop() {
      await Promise.all([...controllers, ...dispatchers].map(p => p.stop()))
    }
  }
  try {
    const hosts = hostsOf(lab(), 'controller').slice(0, options.controllers ?? 3)
    controllers.push(...(await Promise.all(hosts.map(startController))))
    for (const host of hostsOf(lab(), 'dispatcher')) {
      dispatchers.push(
        await startLabDispatcher(
          host,
          brokers().join(','),
          prefix,
          host.name,
          options.capacity ?? 10,
          LIVENESS,
          logs(host)
        )
      )
    }
    await wholeGroup(controllers)
    return pool
  } catch (error) {
    await pool.stop()
    throw error
  }
}

/** Runs the `shoal` command line against the API at `api` (as a user would), throwing unless it exits 0. */
export async function shoalCli(api: string, args: readonly string[]): Promise<string> {
  const child = spawn(process.execPath, [shoalBin, ...args], {
    env: { ...process.env, SHOAL_SERVER: api },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  const { lines, exited } = captureOutput(child)
  const code = await exited
  if (code !== 0) throw new Error(`shoal ${args.join(' ')}: exit ${code}: ${lines.join('\n')}`)
  return lines.join('\n')
}

/** Waits until every controller is in the group and the group owns every bucket. */
async function wholeGroup(controllers: readonly LabController[]): Promise<void> {
  await eventually(
    async () => {
      const group = await replicas(controllers[0]!.url)
      const owned = new Set(group.flatMap(r => (r as Replica & { buckets?: number[] }).buckets ?? []))
      return group.length === controllers.length && owned.size === BUCKETS ? true : undefined
    },
    120_000,
    `${controllers.length} controllers in the group, owning all ${BUCKETS} buckets`
  )
}

/**
 * Moves the scheduler leadership (bucket 0) to the controller in `zone`: unless it leads already, the others are
 * restarted together — it holds every bucket while they are away, and they come back claiming nothing, so it keeps
 * the lowest, bucket 0 (src/store/bucket-assignor.ts). Returns how many controllers were restarted.
 */
export async function leadFrom(pool: Pool, zone: string): Promise<number> {
  const target = pool.controllers.find(c => c.host.zone === zone)
  assert.ok(target, `a controller in zone ${zone}`)
  const leader = await eventually(async () => leaderOf(target.url), 60_000, 'a scheduler leader')
  if (leader.replicaId === target.host.name) return 0
  const others = pool.controllers.filter(c => c !== target)
  await pool.restart(others, () =>
    eventually(
      async () => ((await leaderOf(target.url))?.replicaId === target.host.name ? true : undefined),
      60_000,
      `${target.host.name} leading alone`
    )
  )
  await wholeGroup(pool.controllers)
  const after = await leaderOf(target.url)
  assert.equal(after?.replicaId, target.host.name, 'the leadership stays with the cut zone’s controller')
  return others.length
}

/** The controller replicas and the leader, as the controller at `url` sees them. */
export async function leaderOf(url: string): Promise<Replica | undefined> {
  return (await replicas(url)).find(r => r.leader)
}

/** Each dispatcher's state as the controller at `api` reports it (`Ready`, `Dead`, …). */
export async function dispatcherStates(api: string): Promise<Map<string, string>> {
  const items = ((await http('GET', `${api}${DISPATCHERS}`)).body?.items ?? []) as Array<{
    metadata: { name: string }
    status?: { state?: string }
  }>
  return new Map(items.map(d => [d.metadata.name, d.status?.state ?? '?']))
}

/** `shoal_dispatcher_fenced` of a dispatcher, read over HTTP from its host (not through Kafka). */
export async function fenced(d: LabDispatcher): Promise<boolean> {
  return (await metricSum(d.metricsUrl, 'shoal_dispatcher_fenced')) === 1
}

/** The sum of the samples named `sample` exactly (`…_count` of a histogram too) in the exposition at `url`. */
export async function sampleSum(url: string, sample: string): Promise<number> {
  const text = await (await fetch(url)).text()
  let sum = 0
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{[^}]*\})? (\S+)/.exec(line)
    if (match?.[1] === sample) sum += Number(match[2])
  }
  return sum
}

/** A source's placements (dispatcher → vreplicas), as the API shows them. */
export async function placementsOf(api: string, path: string): Promise<Map<string, number>> {
  const body = (await http('GET', `${api}${path}`)).body
  const placements = (body?.status?.placements ?? []) as Array<{ podName: string; vreplicas: number }>
  return new Map(placements.map(p => [p.podName, p.vreplicas]))
}

/**
 * True when every named source is Ready and Scheduled with nothing pending (`status.consumers` equals the
 * desired count for a KafkaSource) and none is placed on a dispatcher of `avoid`.
 */
export async function settledSources(
  api: string,
  paths: readonly string[],
  avoid: ReadonlySet<string> = new Set()
): Promise<boolean> {
  for (const path of paths) {
    const body = (await http('GET', `${api}${path}`)).body
    const conditions = (body?.status?.conditions ?? []) as Array<{ type: string; status: string }>
    const ok = (type: string): boolean => conditions.find(c => c.type === type)?.status === 'True'
    if (!ok('Ready') || !ok('Scheduled')) return false
    const status = body.status as {
      consumers?: number
      desiredConsumers?: number
      placements?: Array<{ podName: string }>
    }
    if (status.desiredConsumers !== undefined && status.consumers !== status.desiredConsumers) return false
    if ((status.placements ?? []).some(p => avoid.has(p.podName))) return false
  }
  return true
}

// ---- Kafka's view ----

export interface PartitionView {
  readonly topic: string
  readonly partition: number
  readonly leader: number
  readonly replicas: readonly number[]
  readonly isr: readonly number[]
}

/** Leader, replicas and ISR of every partition of the topics, from the brokers' metadata. */
export async function describeTopics(
  topics: readonly string[],
  bootstrap = brokers().join(',')
): Promise<PartitionView[]> {
  const admin = new Admin({ clientId: 'lab-admin', bootstrapBrokers: bootstrap.split(','), timeout: 5_000, retries: 2 })
  try {
    const metadata = await admin.metadata({ topics: [...topics], forceUpdate: true })
    return topics.flatMap(topic =>
      (metadata.topics.get(topic)?.partitions ?? []).map((p, partition) => ({
        topic,
        partition,
        leader: p.leader,
        replicas: [...p.replicas],
        isr: [...p.isr]
      }))
    )
  } finally {
    await admin.close().catch(() => {})
  }
}

/** The partitions as `kafka-topics.sh --describe` prints them, each broker with its rack, as `#` lines. */
export function isrTable(views: readonly PartitionView[], title: string): string {
  const rack = new Map(labBrokers().map(b => [b.nodeId, b.rack]))
  const ids = (xs: readonly number[]): string => xs.map(x => `${x}(${rack.get(x) ?? '?'})`).join(',')
  return [
    `# ${title}`,
    ...views.map(
      v =>
        `# Topic: ${v.topic}\tPartition: ${v.partition}\tLeader: ${v.leader < 0 ? 'none' : ids([v.leader])}` +
        `\tReplicas: ${ids(v.replicas)}\tIsr: ${ids(v.isr)}`
    )
  ].join('\n')
}

/** Waits until every partition of the topics has all three replicas in sync. */
export async function waitFullIsr(
  topics: readonly string[],
  timeoutMs = 60_000,
  bootstrap = brokers().join(',')
): Promise<void> {
  await eventually(
    async () => {
      const views = await describeTopics(topics, bootstrap)
      return views.length > 0 && views.every(v => v.isr.length === 3 && v.leader > 0) ? true : undefined
    },
    timeoutMs,
    `every partition of ${topics.join(', ')} with 3 in-sync replicas`
  )
}

/**
 * Counts a consumer group's rebalances as Kafka's coordinator shows them, polled (DescribeGroups) every 250 ms:
 * the group's generation (the newest generation a member's subscription names) going up, and, for a rebalance
 * two polls could miss, a stable group found with other members or another assignment than the stable poll
 * before. `rebalances` is the larger of the two counts, per group.
 */
export class GroupWatcher {
  readonly #groups: readonly string[]
  readonly #admin: Admin
  readonly #timer: NodeJS.Timeout
  readonly #stable = new Map<string, string>()
  readonly #firstGeneration = new Map<string, number>()
  readonly #generation = new Map<string, number>()
  readonly #changes = new Map<string, number>()
  #polling = false
  polls = 0
  /** Each group's state as polled, a line per change: when the coordinator moved, what a rebalance waited for. */
  readonly timeline: string[] = []
  readonly #last = new Map<string, string>()
  readonly #startedAt = Date.now()
  /** Each group's assignment at its latest Stable poll: member (instance id) → partitions of every topic. */
  readonly #held = new Map<string, Map<string, number[]>>()

  constructor(groups: readonly string[], bootstrap = brokers().join(',')) {
    this.#groups = groups
    this.#admin = new Admin({ clientId: 'lab-group-watch', bootstrapBrokers: bootstrap.split(','), timeout: 2_000 })
    this.#timer = setInterval(() => void this.#poll(), 250)
  }

  /** Rebalances seen per group since the watcher started. */
  get rebalances(): Map<string, number> {
    return new Map(
      this.#groups.map(g => {
        const generations = (this.#generation.get(g) ?? 0) - (this.#firstGeneration.get(g) ?? 0)
        return [g, Math.max(generations, this.#changes.get(g) ?? 0)]
      })
    )
  }

  /** The partitions each member (by instance id) of `group` held at its latest Stable poll. */
  held(group: string): ReadonlyMap<string, readonly number[]> {
    return this.#held.get(group) ?? new Map()
  }

  /** Rebalances seen, over every group. */
  get total(): number {
    return [...this.rebalances.values()].reduce((n, x) => n + x, 0)
  }

  async #poll(): Promise<void> {
    if (this.#polling) return
    this.#polling = true
    try {
      const described = await this.#admin.describeGroups({ groups: [...this.#groups] })
      this.polls++
      for (const [id, group] of described) {
        const members = [...group.members.values()]
        const generation = Math.max(-1, ...members.map(m => m.metadata?.generationId ?? -1))
        const line = `${group.state} [${members
          .map(m => m.groupInstanceId ?? m.clientId)
          .sort()
          .join(' ')}]`
        if (this.#last.get(id) !== line) {
          this.#last.set(id, line)
          this.timeline.push(`+${seconds(Date.now() - this.#startedAt)} ${id.slice(-12)}: ${line}`)
        }
        if (generation >= 0) {
          if (!this.#firstGeneration.has(id)) this.#firstGeneration.set(id, generation)
          this.#generation.set(id, Math.max(generation, this.#generation.get(id) ?? generation))
        }
        if (group.state !== 'Stable') continue
        this.#held.set(
          id,
          new Map(
            members.map(m => [
              m.groupInstanceId ?? m.id,
              [...(m.assignments?.values() ?? [])].flatMap(a => [...a.partitions]).sort((x, y) => x - y)
            ])
          )
        )
        const fingerprint = members
          .map(m => {
            const assigned = [...(m.assignments?.values() ?? [])]
              .map(a => `${a.topic}:${[...a.partitions].sort((x, y) => x - y).join('.')}`)
              .join(';')
            return `${m.groupInstanceId ?? m.id}=${assigned}`
          })
          .sort()
          .join('|')
        const before = this.#stable.get(id)
        if (before !== undefined && before !== fingerprint) this.#changes.set(id, (this.#changes.get(id) ?? 0) + 1)
        this.#stable.set(id, fingerprint)
      }
    } catch {
      // A poll that fails (a broker moving the coordinator) is skipped; the next one sees the outcome.
    } finally {
      this.#polling = false
    }
  }

  async close(): Promise<void> {
    clearInterval(this.#timer)
    while (this.#polling) await new Promise(resolve => setTimeout(resolve, 20))
    await this.#admin.close().catch(() => {})
  }
}

// ---- the summary table ----

/** Adds a row to the summary table (SHOAL_FAULTS_FIGURES, printed by run.ts). */
export function appendRow(row: Record<string, string | number>): void {
  const file = process.env.SHOAL_FAULTS_FIGURES
  if (file) appendFileSync(file, JSON.stringify(row) + '\n')
}

/** Timings as the table's `times` column: `label 7.1 s, label 2.0 s`. */
export function timesNote(times: Record<string, number | undefined>): string {
  return Object.entries(times)
    .filter(([, ms]) => ms !== undefined)
    .map(([label, ms]) => `${label} ${seconds(ms!)}`)
    .join(', ')
}
