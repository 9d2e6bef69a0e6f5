import type { IncomingMessage, ServerResponse } from 'node:http'
import { DispatcherKind } from '../api/index.ts'
import type { FlowControlRow, SinkOriginRow } from '../api/index.ts'
import { lagSourceOf } from '../autoscale/index.ts'
import type { MemberStatus } from '../dispatcher/index.ts'
import type { LagSource } from '../lag/index.ts'
import { ControllerMetrics, LagMonitor } from '../metrics/index.ts'
import type { SourcePlacementView } from '../metrics/index.ts'
import { sourceNet } from '../secrets/index.ts'
import type { SecretKey, SourceNet } from '../secrets/index.ts'
import { isDispatcher, isKafkaSource, isSource } from '../store/index.ts'
import type { ResourceStore, StoredEntry, StoredSource } from '../store/index.ts'
import { UiServer, buildSnapshot, historyPoints } from '../ui/index.ts'
import type { UiCondition, UiPoint, UiSnapshot } from '../ui/index.ts'

export interface ObservabilityOptions {
  readonly replicaId: string
  readonly store: ResourceStore
  /** Every dispatcher the members view knows, dead ones included until they leave it. */
  readonly members: () => readonly MemberStatus[]
  /** A source as the API shows it (its conditions with Scheduled merged in). */
  readonly present: (entry: StoredEntry<StoredSource>) => unknown
  readonly lagIntervalMs?: number
  readonly maxSourceLabels?: number
  readonly processMetrics?: boolean
  readonly log: (level: 'warn', message: string, fields?: Record<string, unknown>) => void
  /** Opens the Secrets of sources' `spec.net`: the lag monitor reads each source's cluster with its credentials. */
  readonly secretKey?: SecretKey
}

/** A controller's /metrics and /ui, and the hooks that feed them. */
export interface Observability {
  /** Answers /metrics and /ui…; false for any other path. */
  handle(req: IncomingMessage, res: ServerResponse, path: string): boolean
  observeRequest(method: string, path: string, status: number, seconds: number): void
  observePass(seconds: number): void
  readonly metrics: ControllerMetrics
  readonly lag: LagMonitor
  close(): Promise<void>
}

/**
 * The controller's metrics, lag monitor and dashboard over its store and members view. Lag is measured by the
 * scheduler leader only (the autoscalers need it there, and one replica asking Kafka is enough); the per-source
 * series and the dashboard's lag and throughput come from it.
 */
export function startObservability(options: ObservabilityOptions): Observability {
  const store = options.store
  const sources = () => store.snapshot(isSourceKey).filter(isSource)
  const net = sourceNet(store, options.secretKey)
  const lag = new LagMonitor({
    targets: () => (store.isLeader ? sources().flatMap(e => lagTarget(e, net)) : []),
    ...(options.lagIntervalMs === undefined ? {} : { intervalMs: options.lagIntervalMs }),
    clientId: `shoal-controller-${options.replicaId}-lag`,
    log: (message, error) => options.log('warn', message, { error: String(error) })
  })
  lag.start()
  const metrics = new ControllerMetrics({
    replicaId: options.replicaId,
    ...(options.maxSourceLabels === undefined ? {} : { maxSourceLabels: options.maxSourceLabels }),
    ...(options.processMetrics === undefined ? {} : { processMetrics: options.processMetrics }),
    view: {
      buckets: () => ({ owned: store.assignment.buckets.length, total: store.buckets }),
      leader: () => store.isLeader,
      sources: () => sources().map(placementView),
      lag: () => lag.readings()
    }
  })
  const ui = new UiServer({ snapshot: () => snapshot(options, lag) })
  return {
    metrics,
    lag,
    handle(req, res, path) {
      if (path === '/metrics') {
        metrics.metrics().then(
          text => res.writeHead(200, { 'content-type': metrics.contentType }).end(text),
          error => res.writeHead(500, { 'content-type': 'text/plain' }).end(`collecting metrics failed: ${error}\n`)
        )
        return true
      }
      return ui.handle(req, res, path)
    },
    observeRequest: (method, path, status, seconds) => metrics.observeRequest(method, path, status, seconds),
    observePass: seconds => metrics.observePass(seconds),
    async close() {
      ui.close()
      await lag.stop()
    }
  }
}

function snapshot(options: ObservabilityOptions, lag: LagMonitor): UiSnapshot {
  const store = options.store
  const cordoned = new Set(
    store
      .snapshot(k => k.startsWith(`${DispatcherKind.kind}/`))
      .filter(e => isDispatcher(e) && e.object.spec.unschedulable)
      .map(e => e.object.metadata.name)
  )
  const history = new Map<string, UiPoint[]>()
  const entries = store.snapshot(isSourceKey).filter(isSource)
  for (const entry of entries) {
    const samples = lag.history(entry.key)
    if (samples.length > 0) history.set(entry.key, historyPoints(samples))
  }
  const leaderUrl = store.isLeader ? undefined : store.controllers().find(c => c.buckets.includes(0))?.url
  return buildSnapshot({
    now: Date.now(),
    replicaId: options.replicaId,
    leader: store.isLeader,
    ...(leaderUrl === undefined ? {} : { leaderUrl }),
    dispatchers: options.members().map(m => ({
      id: m.id,
      zone: m.zone,
      node: m.node,
      capacity: m.capacity.consumers,
      alive: m.state !== 'dead',
      cordoned: cordoned.has(m.id)
    })),
    sources: entries.map(entry => {
      const view = placementView(entry)
      const s = entry.scheduling
      return {
        key: entry.key,
        slot: entry.object.kind === 'KafkaSource' ? 'consumer' : 'schedule',
        desired: view.desired,
        placements: s?.placements ?? [],
        pending: view.pending,
        ...(s?.reason === undefined ? {} : { reason: s.reason }),
        ...(s?.message === undefined ? {} : { message: s.message }),
        ...presentedParts(options.present(entry))
      }
    }),
    history
  })
}

/** What the dashboard shows of a source as the API presents it: its conditions, flow control and sink origins. */
function presentedParts(presented: unknown): {
  conditions: UiCondition[]
  flow?: FlowControlRow[]
  origins?: SinkOriginRow[]
} {
  const flow = flowOf(presented)
  const origins = originsOf(presented)
  return {
    conditions: conditionsOf(presented),
    ...(flow.length > 0 ? { flow } : {}),
    ...(origins.length > 0 ? { origins } : {})
  }
}

function flowOf(presented: unknown): FlowControlRow[] {
  const rows = (presented as { status?: { flowControl?: unknown } }).status?.flowControl
  // presentSource builds these rows (FlowControlRow), so they have the shape the dashboard reads.
  return Array.isArray(rows) ? (rows as FlowControlRow[]) : []
}

function originsOf(presented: unknown): SinkOriginRow[] {
  const rows = (presented as { status?: { sinkOrigins?: unknown } }).status?.sinkOrigins
  // presentSource builds these rows (SinkOriginRow) too.
  return Array.isArray(rows) ? (rows as SinkOriginRow[]) : []
}

function conditionsOf(presented: unknown): UiCondition[] {
  const conditions = (presented as { status?: { conditions?: unknown } }).status?.conditions
  if (!Array.isArray(conditions)) return []
  return conditions.map((c: { type?: unknown; status?: unknown; reason?: unknown; message?: unknown }) => ({
    type: String(c.type),
    status: String(c.status),
    ...(typeof c.reason === 'string' && c.reason !== '' ? { reason: c.reason } : {}),
    ...(typeof c.message === 'string' && c.message !== '' ? { message: c.message } : {})
  }))
}

/** Desired is what the scheduler was asked for (placed + pending) once it has placed the source, else the spec's. */
function placementView(entry: StoredEntry): SourcePlacementView {
  const s = entry.scheduling
  const placed = s?.placements.reduce((n, p) => n + p.vreplicas, 0) ?? 0
  const pending = s?.pending ?? 0
  const desired = s ? placed + pending : isKafkaSource(entry) ? entry.object.spec.consumers : 1
  return { key: entry.key, desired, placed, pending }
}

function lagTarget(entry: StoredEntry, netOf: SourceNet): LagSource[] {
  return isKafkaSource(entry) ? [lagSourceOf(entry, netOf(entry))] : []
}

function isSourceKey(key: string): boolean {
  return key.startsWith('KafkaSource/') || key.startsWith('PingSource/')
}
