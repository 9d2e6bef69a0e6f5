// What the dashboard shows, built from the controller's views in one pure function (tested without I/O).
import type { FlowControlRow, SinkOriginRow } from '../api/index.ts'
import { ratesBetween } from '../lag/index.ts'
import type { LagSample } from '../lag/index.ts'

/** A dispatcher as the controller sees it from heartbeats and the Dispatcher resource. */
export interface UiDispatcherInput {
  readonly id: string
  readonly zone: string
  readonly node: string
  readonly capacity: number
  readonly alive: boolean
  readonly cordoned: boolean
}

/** A source with its placements record and presented conditions. */
export interface UiSourceInput {
  /** `Kind/namespace/name`. */
  readonly key: string
  /** Which slots its vreplicas take: consumer (KafkaSource) or schedule (PingSource). */
  readonly slot: 'consumer' | 'schedule'
  readonly desired: number
  readonly placements: ReadonlyArray<{ readonly podName: string; readonly vreplicas: number }>
  readonly pending: number
  readonly reason?: string
  readonly message?: string
  readonly conditions: readonly UiCondition[]
  /** Its per-sink flow control on the dispatchers it is placed on (the presented `status.flowControl`). */
  readonly flow?: readonly FlowControlRow[]
  /** Those dispatchers' connections to its sink origins (the presented `status.sinkOrigins`). */
  readonly origins?: readonly SinkOriginRow[]
}

export interface UiCondition {
  readonly type: string
  readonly status: string
  readonly reason?: string
  readonly message?: string
}

/** One point of a source's history: its lag and consumed throughput then. */
export interface UiPoint {
  readonly at: number
  readonly lag: number
  readonly rate: number
}

export interface UiSnapshotInput {
  readonly now: number
  readonly replicaId: string
  readonly leader: boolean
  /** Where the leader serves its dashboard, when another replica leads. */
  readonly leaderUrl?: string
  readonly dispatchers: readonly UiDispatcherInput[]
  readonly sources: readonly UiSourceInput[]
  /** Per source key, its history oldest first (KafkaSources on the leader). */
  readonly history: ReadonlyMap<string, readonly UiPoint[]>
  /** Sources that get a history in the snapshot, at most (the rest show their latest figures). */
  readonly maxHistories?: number
}

export interface UiVReplicas {
  /** `namespace/name`. */
  readonly source: string
  readonly kind: string
  readonly slot: 'consumer' | 'schedule'
  readonly count: number
}

export interface UiDispatcher {
  readonly id: string
  readonly node: string
  readonly state: 'Ready' | 'Cordoned' | 'Dead'
  /** Consumer slots offered and filled (PingSource schedules are shown, but take schedule slots). */
  readonly capacity: number
  readonly used: number
  readonly vreplicas: readonly UiVReplicas[]
}

export interface UiZone {
  readonly name: string
  readonly dispatchers: readonly UiDispatcher[]
}

export interface UiSource {
  /** `namespace/name`. */
  readonly name: string
  readonly kind: string
  readonly desired: number
  readonly placed: number
  readonly pending: number
  readonly reason?: string
  readonly message?: string
  readonly conditions: readonly UiCondition[]
  readonly lag?: number
  readonly rate?: number
  readonly history?: readonly UiPoint[]
  /** Its flow control gates, by dispatcher then sink; absent when it has none. */
  readonly flow?: readonly FlowControlRow[]
  /** Its sink origins as its dispatchers see them, by dispatcher then origin; absent when none reported them. */
  readonly origins?: readonly SinkOriginRow[]
}

/** The dashboard's whole state, sent on every change. */
export interface UiSnapshot {
  readonly at: number
  readonly replicaId: string
  readonly leader: boolean
  readonly leaderUrl?: string
  readonly zones: readonly UiZone[]
  readonly sources: readonly UiSource[]
  /** Placements on dispatchers that are not alive (moving once the scheduler sees them gone). */
  readonly stranded: number
}

export const DEFAULT_MAX_HISTORIES = 50

function nameOf(key: string): { kind: string; name: string } {
  const slash = key.indexOf('/')
  return { kind: key.slice(0, slash), name: key.slice(slash + 1) }
}

/**
 * Zones (sorted) → dispatchers (by ordinal) → the vreplicas placed on each, by source; sources sorted by name with
 * their figures. Placements on a dispatcher the controller does not know (gone from the members view) are shown
 * under zone `?` so nothing placed is hidden.
 */
export function buildSnapshot(input: UiSnapshotInput): UiSnapshot {
  const byDispatcher = new Map<string, Map<string, UiVReplicas>>()
  for (const source of input.sources) {
    const { kind, name } = nameOf(source.key)
    for (const p of source.placements) {
      const on = byDispatcher.get(p.podName) ?? new Map<string, UiVReplicas>()
      const count = (on.get(source.key)?.count ?? 0) + p.vreplicas
      on.set(source.key, { source: name, kind, slot: source.slot, count })
      byDispatcher.set(p.podName, on)
    }
  }
  const known = new Map(input.dispatchers.map(d => [d.id, d]))
  const dispatchers = [...input.dispatchers]
  for (const id of byDispatcher.keys())
    if (!known.has(id)) dispatchers.push({ id, zone: '?', node: '?', capacity: 0, alive: false, cordoned: false })
  const zones = new Map<string, UiDispatcher[]>()
  let stranded = 0
  for (const d of dispatchers.sort((a, b) => ordinal(a.id) - ordinal(b.id) || (a.id < b.id ? -1 : 1))) {
    const on = byDispatcher.get(d.id) ?? new Map<string, UiVReplicas>()
    const vreplicas = [...on].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, v]) => v)
    const used = vreplicas.filter(v => v.slot === 'consumer').reduce((n, v) => n + v.count, 0)
    if (!d.alive) stranded += vreplicas.reduce((n, v) => n + v.count, 0)
    const list = zones.get(d.zone) ?? []
    list.push({
      id: d.id,
      node: d.node,
      state: !d.alive ? 'Dead' : d.cordoned ? 'Cordoned' : 'Ready',
      capacity: d.capacity,
      used,
      vreplicas
    })
    zones.set(d.zone, list)
  }
  const ranked = [...input.sources]
    .map(s => ({ key: s.key, last: input.history.get(s.key)?.at(-1) }))
    .filter(s => s.last !== undefined)
    .sort((a, b) => b.last!.lag + b.last!.rate - (a.last!.lag + a.last!.rate))
    .slice(0, input.maxHistories ?? DEFAULT_MAX_HISTORIES)
  const withHistory = new Set(ranked.map(r => r.key))
  const sources = input.sources
    .map((s): UiSource & { key: string } => {
      const { kind, name } = nameOf(s.key)
      const history = input.history.get(s.key)
      const last = history?.at(-1)
      return {
        key: s.key,
        name,
        kind,
        desired: s.desired,
        placed: s.placements.reduce((n, p) => n + p.vreplicas, 0),
        pending: s.pending,
        ...(s.reason === undefined ? {} : { reason: s.reason }),
        ...(s.message === undefined ? {} : { message: s.message }),
        conditions: s.conditions,
        ...(last ? { lag: last.lag, rate: last.rate } : {}),
        ...(history && withHistory.has(s.key) ? { history } : {}),
        ...(s.flow !== undefined && s.flow.length > 0 ? { flow: [...s.flow].sort(byDispatcherThenSink) } : {}),
        ...(s.origins !== undefined && s.origins.length > 0
          ? { origins: [...s.origins].sort(byDispatcherThenOrigin) }
          : {})
      }
    })
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : a.kind < b.kind ? -1 : 1))
    .map(({ key: _key, ...rest }) => rest)
  return {
    at: input.now,
    replicaId: input.replicaId,
    leader: input.leader,
    ...(input.leaderUrl === undefined ? {} : { leaderUrl: input.leaderUrl }),
    zones: [...zones]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([name, list]) => ({ name, dispatchers: list })),
    sources,
    stranded
  }
}

function byDispatcherThenSink(a: FlowControlRow, b: FlowControlRow): number {
  return ordinal(a.dispatcher) - ordinal(b.dispatcher) || compare(a.dispatcher, b.dispatcher) || compare(a.sink, b.sink)
}

function byDispatcherThenOrigin(a: SinkOriginRow, b: SinkOriginRow): number {
  return (
    ordinal(a.dispatcher) - ordinal(b.dispatcher) || compare(a.dispatcher, b.dispatcher) || compare(a.origin, b.origin)
  )
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}

function ordinal(id: string): number {
  const match = /-(\d+)$/.exec(id)
  return match ? Number(match[1]) : Number.MAX_SAFE_INTEGER
}

/** A source's history points from lag samples: lag, and records consumed per second since the sample before. */
export function historyPoints(samples: readonly LagSample[]): UiPoint[] {
  return samples.map((s, i) => {
    const before = samples[i - 1]
    return { at: s.at, lag: s.lag, rate: before ? ratesBetween(before, s).consumedPerSec : 0 }
  })
}
