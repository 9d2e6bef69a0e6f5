/**
 * Scheduler benchmark (`npm run bench:scheduler`): full and incremental passes of the pure scheduler core.
 *
 * Pools of 100 and 1,000 dispatchers in 5 zones, 10 dispatchers per node (so 2 nodes per zone at 100
 * dispatchers, 20 at 1,000), every dispatcher with the same consumer capacity: 120 % of the demand spread evenly
 * (one row at 90 %, to show the pending path). Sources are KafkaSources with 1–19 vreplicas (10 on average) and
 * 32 partitions, from a fixed seed. Prints a markdown table; docs/benchmarks-history.md holds a run.
 *
 * On the same inputs, in the same run, a peer written the way Knative's eventing scheduler works
 * (`bench/peer-per-vreplica.ts`: every dispatcher filtered and scored for every vreplica) places the 10k-source
 * rows (median of the runs) and the 100k × 1,000 row at 120 %, the latter time-boxed: it places sources in order
 * until `--peer-budget` seconds (default 20) run out and the full pass is extrapolated linearly in vreplicas.
 *
 *   node --expose-gc bench/scheduler.ts [--quick] [--runs N] [--sources N] [--dispatchers N]
 *                                       [--no-peer] [--peer-budget S]
 */
import { availableParallelism } from 'node:os'
import { Scheduler } from '../src/scheduler/index.ts'
import type { DispatcherInfo, VPod } from '../src/scheduler/index.ts'
import { checkPeer, peerSchedule } from './peer-per-vreplica.ts'
import type { PeerResult } from './peer-per-vreplica.ts'

interface Case {
  readonly sources: number
  readonly dispatchers: number
  /** Pool consumer capacity as a share of the vreplicas wanted. */
  readonly headroom: number
}

interface Row {
  readonly case: Case
  readonly vreplicas: number
  readonly loadMs: number
  readonly fullMs: number
  readonly incrementalMs: number
  readonly incrementalRecomputed: number
  readonly lostMs: number
  readonly lostRecomputed: number
  readonly heapBytesPerSource: number
  readonly placed: number
  readonly pending: number
  readonly balancedness: number
  readonly balancednessMs: number
  /** Upsert all + full pass, median of the runs: what the peer's figure compares with. */
  readonly shoalTotalMs: number
  readonly peer: PeerRow | undefined
}

interface PeerRow {
  /** Measured (median of the runs), or extrapolated from a time-boxed prefix. */
  readonly ms: number
  readonly extrapolated: boolean
  /** Sources and vreplicas of the prefix actually placed. */
  readonly sourcesRun: number
  readonly vreplicasRun: number
  readonly placed: number
  readonly pending: number
  readonly problems: number
  /** Balancedness of the peer's placements (complete runs only), scored by Shoal. */
  readonly balancedness: number | undefined
}

const ZONES = 5
const PER_NODE = 10

const args = process.argv.slice(2)
const quick = args.includes('--quick')
const runsArg = args.indexOf('--runs')
const RUNS = runsArg >= 0 ? Number(args[runsArg + 1]) : quick ? 1 : 3
const INCREMENTAL_RUNS = quick ? 3 : 7

const only = (name: string) => {
  const i = args.indexOf(name)
  return i >= 0 ? Number(args[i + 1]) : undefined
}
const onlySources = only('--sources')
const onlyDispatchers = only('--dispatchers')
const PEER = !args.includes('--no-peer')
const PEER_BUDGET_MS = (only('--peer-budget') ?? 20) * 1000

/** The peer runs every 10k row in full, and the 100k × 1,000 row at 120 % time-boxed. */
const peerMode = (c: Case): 'full' | 'time-boxed' | undefined =>
  !PEER
    ? undefined
    : c.sources <= 10_000
      ? 'full'
      : c.dispatchers === 1_000 && c.headroom === 1.2
        ? 'time-boxed'
        : undefined

const allCases: Case[] = quick
  ? [
      { sources: 10_000, dispatchers: 100, headroom: 1.2 },
      { sources: 10_000, dispatchers: 1_000, headroom: 1.2 }
    ]
  : [
      { sources: 10_000, dispatchers: 100, headroom: 1.2 },
      { sources: 10_000, dispatchers: 1_000, headroom: 1.2 },
      { sources: 100_000, dispatchers: 100, headroom: 1.2 },
      { sources: 100_000, dispatchers: 1_000, headroom: 1.2 },
      { sources: 100_000, dispatchers: 1_000, headroom: 0.9 }
    ]
const cases = allCases.filter(
  c =>
    (onlySources === undefined || c.sources === onlySources) &&
    (onlyDispatchers === undefined || c.dispatchers === onlyDispatchers)
)

/** A small fast PRNG (mulberry32) so every run places the same sources. */
function rng(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

function pool(count: number, capacity: number): DispatcherInfo[] {
  return Array.from({ length: count }, (_, i) => {
    const zone = i % ZONES
    return {
      id: `dispatcher-${i}`,
      ordinal: i,
      zone: `zone-${zone}`,
      node: `zone-${zone}-node-${Math.floor(Math.floor(i / ZONES) / PER_NODE)}`,
      capacity: { consumer: capacity, schedule: capacity },
      state: 'ready' as const
    }
  })
}

function sources(count: number, random: () => number): VPod[] {
  return Array.from({ length: count }, (_, i) => ({
    key: `KafkaSource/ns-${i % 100}/source-${i}`,
    slot: 'consumer' as const,
    vreplicas: 1 + Math.floor(random() * 19),
    maxVReplicas: 32
  }))
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)]!
}

function gc(): void {
  const collect = (globalThis as { gc?: () => void }).gc
  if (collect !== undefined) {
    collect()
    collect()
  }
}

/** A fresh scheduler over the whole pool and every source: the time to load it and to schedule it. */
function fullPass(dispatchers: readonly DispatcherInfo[], vpods: readonly VPod[]) {
  const scheduler = new Scheduler()
  const t0 = performance.now()
  scheduler.setDispatchers(dispatchers)
  for (const v of vpods) scheduler.upsertVPod(v)
  const t1 = performance.now()
  scheduler.schedule()
  const t2 = performance.now()
  return { scheduler, loadMs: t1 - t0, fullMs: t2 - t1 }
}

/**
 * The heap a scheduled pool holds, measured in a run of its own: a collection forced just before a timed pass
 * shrinks V8's heap limits and makes the pass pay for regrowing them, which a running leader never does.
 */
function heapOf(dispatchers: readonly DispatcherInfo[], vpods: readonly VPod[]) {
  gc()
  const before = process.memoryUsage().heapUsed
  const { scheduler } = fullPass(dispatchers, vpods)
  gc()
  return { scheduler, heapBytes: process.memoryUsage().heapUsed - before }
}

function runCase(c: Case): Row {
  const vpods = sources(c.sources, rng(42))
  const vreplicas = vpods.reduce((sum, v) => sum + v.vreplicas, 0)
  const capacity = Math.ceil((vreplicas * c.headroom) / c.dispatchers)
  const dispatchers = pool(c.dispatchers, capacity)
  const loads: number[] = []
  const fulls: number[] = []
  const totals: number[] = []
  for (let run = 0; run < RUNS; run++) {
    const measured = fullPass(dispatchers, vpods)
    loads.push(measured.loadMs)
    fulls.push(measured.fullMs)
    totals.push(measured.loadMs + measured.fullMs)
  }
  // The scheduler of the memory run goes on to the incremental passes.
  const { scheduler: s, heapBytes: heap } = heapOf(dispatchers, vpods)
  const summary = s.summary()
  const b0 = performance.now()
  const balancedness = s.balancedness()
  const balancednessMs = performance.now() - b0

  // 1 % of the sources change their vreplicas (1–19 again), as an autoscaler would.
  const random = rng(7)
  const incrementals: number[] = []
  let incrementalRecomputed = 0
  for (let run = 0; run < INCREMENTAL_RUNS; run++) {
    for (let i = 0; i < c.sources / 100; i++) {
      const v = vpods[Math.floor(random() * vpods.length)]!
      s.upsertVPod({ ...v, vreplicas: 1 + Math.floor(random() * 19) })
    }
    const t = performance.now()
    const result = s.schedule()
    incrementals.push(performance.now() - t)
    incrementalRecomputed = result.stats.recomputed
  }

  // One dispatcher dies: its vreplicas go elsewhere.
  const lost = dispatchers.filter(d => d.id !== `dispatcher-${Math.floor(c.dispatchers / 2)}`)
  const t = performance.now()
  s.setDispatchers(lost)
  const lostResult = s.schedule()
  const lostMs = performance.now() - t

  return {
    shoalTotalMs: median(totals),
    peer: runPeer(c, dispatchers, vpods),
    case: c,
    vreplicas,
    loadMs: median(loads),
    fullMs: median(fulls),
    incrementalMs: median(incrementals),
    incrementalRecomputed,
    lostMs,
    lostRecomputed: lostResult.stats.recomputed,
    heapBytesPerSource: heap / c.sources,
    placed: summary.used.consumer,
    pending: summary.pendingForCapacity.consumer + summary.pendingUnschedulable.consumer,
    balancedness,
    balancednessMs
  }
}

/** The peer on the same pool and sources: every run in full, or one time-boxed prefix, extrapolated. */
function runPeer(c: Case, dispatchers: readonly DispatcherInfo[], vpods: readonly VPod[]): PeerRow | undefined {
  const mode = peerMode(c)
  if (mode === undefined) return undefined
  const results: PeerResult[] = []
  for (let run = 0; run < (mode === 'full' ? RUNS : 1); run++) {
    gc()
    results.push(peerSchedule(dispatchers, vpods, mode === 'full' ? {} : { budgetMs: PEER_BUDGET_MS }))
  }
  const r = results[results.length - 1]!
  const wanted = vpods.reduce((sum, v) => sum + Math.min(v.vreplicas, v.maxVReplicas ?? Infinity), 0)
  const problems = checkPeer(dispatchers, vpods, r)
  for (const p of problems.slice(0, 5)) process.stderr.write(`peer: ${p}\n`)
  let balancedness: number | undefined
  if (r.complete) {
    // Shoal scores the peer's placements: restored as they are, nothing re-placed.
    const s = new Scheduler()
    s.setDispatchers(dispatchers)
    for (const v of vpods) s.upsertVPod(v)
    s.restore(r.sources.map((src, i) => ({ key: src.key, slot: vpods[i]!.slot, placements: src.placements })))
    balancedness = s.balancedness()
  }
  return {
    ms: r.complete ? median(results.map(x => x.ms)) : (r.ms * wanted) / r.vreplicasWanted,
    extrapolated: !r.complete,
    sourcesRun: r.sources.length,
    vreplicasRun: r.vreplicasWanted,
    placed: r.vreplicasPlaced,
    pending: r.pending,
    problems: problems.length,
    balancedness
  }
}

const fmt = (n: number, digits = 0) =>
  n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits })

const rows: Row[] = []
for (const c of cases) {
  rows.push(runCase(c))
  process.stderr.write('.')
}
process.stderr.write('\n')

console.log(
  `Node ${process.version}, ${availableParallelism()} cores, ${RUNS} run(s) per full pass (median), ` +
    `${INCREMENTAL_RUNS} incremental passes (median)${(globalThis as { gc?: unknown }).gc ? '' : ', no --expose-gc: heap figures are rough'}`
)
console.log()
console.log(
  '| sources | dispatchers | capacity | vreplicas | placed | pending | upsert all | full pass | incremental (1 %) | recomputed | dispatcher lost | recomputed | heap / source | balancedness | score time |'
)
console.log('|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|')
for (const r of rows) {
  console.log(
    `| ${fmt(r.case.sources)} | ${fmt(r.case.dispatchers)} | ${Math.round(r.case.headroom * 100)} % | ${fmt(r.vreplicas)} | ${fmt(r.placed)} | ${fmt(r.pending)} | ` +
      `${fmt(r.loadMs)} ms | **${fmt(r.fullMs)} ms** | **${fmt(r.incrementalMs, 1)} ms** | ${fmt(r.incrementalRecomputed)} | ` +
      `${fmt(r.lostMs, 1)} ms | ${fmt(r.lostRecomputed)} | ${fmt(r.heapBytesPerSource)} B | ${r.balancedness} | ${fmt(r.balancednessMs, 1)} ms |`
  )
}

const peerRows = rows.filter(r => r.peer !== undefined)
if (peerRows.length > 0) {
  const boxed = peerRows.some(r => r.peer!.extrapolated)
  console.log()
  console.log(
    'Peer: per-vreplica scheduling as in Knative (bench/peer-per-vreplica.ts), same inputs; Shoal = upsert all + full pass.' +
      (boxed
        ? ` Time-boxed rows placed a prefix of the sources for ${PEER_BUDGET_MS / 1000} s, extrapolated linearly in vreplicas (~).`
        : '')
  )
  console.log()
  console.log(
    '| sources | dispatchers | vreplicas | Shoal | peer | peer / Shoal | peer placed (of run) | pending | capacity check | balancedness Shoal / peer |'
  )
  console.log('|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|')
  for (const r of peerRows) {
    const p = r.peer!
    const mark = p.extrapolated ? '~' : ''
    const ran = p.extrapolated
      ? `${fmt(p.placed)} of ${fmt(p.vreplicasRun)} (${fmt(p.sourcesRun)} sources)`
      : fmt(p.placed)
    console.log(
      `| ${fmt(r.case.sources)} | ${fmt(r.case.dispatchers)} | ${fmt(r.vreplicas)} | ${fmt(r.shoalTotalMs)} ms | ` +
        `**${mark}${fmt(p.ms / 1000, 1)} s**${p.extrapolated ? ' (extrapolated)' : ''} | **${mark}${fmt(p.ms / r.shoalTotalMs, p.ms / r.shoalTotalMs < 10 ? 1 : 0)}×** | ` +
        `${ran} | ${fmt(p.pending)} | ${p.problems === 0 ? 'ok' : `${p.problems} problems`} | ` +
        `${r.balancedness} / ${p.balancedness ?? '—'} |`
    )
  }
}
