import { Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client'
import type { LagSnapshot } from './lag-monitor.ts'
import { rankSources } from './rank-sources.ts'
import { OTHER_SOURCE, sourceLabels } from './source-labels.ts'
import { DEFAULT_MAX_SOURCE_LABELS } from './source-metrics.ts'

/** A source as the scheduler placed it. */
export interface SourcePlacementView {
  /** `Kind/namespace/name`. */
  readonly key: string
  readonly desired: number
  readonly placed: number
  readonly pending: number
}

/** What the controller's metrics read, on every scrape. */
export interface ControllerView {
  /** Buckets this replica owns, and how many there are. */
  buckets(): { readonly owned: number; readonly total: number }
  /** Whether this replica runs the scheduler (owns bucket 0). */
  leader(): boolean
  /** Every source with its placement figures; read only while leading. */
  sources(): readonly SourcePlacementView[]
  /** The lag monitor's latest readings; read only while leading. */
  lag(): ReadonlyMap<string, LagSnapshot>
}

export interface ControllerMetricsOptions {
  readonly replicaId: string
  readonly view: ControllerView
  /** Sources with a `source` label of their own (default 200); the rest are summed under `_other`. */
  readonly maxSourceLabels?: number
  /** Also Node.js's process metrics (for a process that runs one controller). */
  readonly processMetrics?: boolean
}

/** `route` label values of shoal_api_request_duration_seconds: a bounded set, never a resource name. */
export type RouteLabel = 'resources' | 'internal' | 'rebalance' | 'metrics' | 'ui' | 'health' | 'discovery' | 'other'

/** Maps a request path to its route label (pure). */
export function routeOf(path: string): RouteLabel {
  if (path.startsWith('/apis/')) return 'resources'
  if (path.startsWith('/internal/')) return 'internal'
  if (path.startsWith('/shoal/v1/rebalance')) return 'rebalance'
  if (path === '/metrics') return 'metrics'
  if (path === '/ui' || path.startsWith('/ui/')) return 'ui'
  if (path === '/healthz' || path === '/readyz') return 'health'
  if (path === '/apis' || path === '/openapi.json') return 'discovery'
  return 'other'
}

/** Buckets of the scheduling pass and API request histograms: a millisecond to tens of seconds. */
export const CONTROL_DURATION_BUCKETS: readonly number[] = Object.freeze([
  0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30
])

/**
 * One controller replica's metrics in a registry of its own, every series labelled `controller`: its buckets and
 * leadership, scheduling passes and API requests, and — on the scheduler leader only, so that summing over
 * replicas counts each source once — every source's consumers desired, placed and pending and its consumer lag.
 */
export class ControllerMetrics {
  readonly registry = new Registry()
  readonly #passes: Histogram
  readonly #requests: Histogram<'method' | 'route' | 'code'>
  readonly #refresh: () => void
  #labelled = new Set<string>()

  constructor(options: ControllerMetricsOptions) {
    const view = options.view
    this.registry.setDefaultLabels({ controller: options.replicaId })
    if (options.processMetrics === true) collectDefaultMetrics({ register: this.registry })
    const registers = [this.registry]
    new Gauge({
      name: 'shoal_controller_buckets_owned',
      help: 'Buckets (partitions of the resources topic) this replica owns.',
      registers,
      collect() {
        this.set(view.buckets().owned)
      }
    })
    new Gauge({
      name: 'shoal_controller_buckets',
      help: 'Buckets there are in all.',
      registers,
      collect() {
        this.set(view.buckets().total)
      }
    })
    new Gauge({
      name: 'shoal_controller_leader',
      help: '1 while this replica is the scheduler leader (owns bucket 0), else 0.',
      registers,
      collect() {
        this.set(view.leader() ? 1 : 0)
      }
    })
    this.#passes = new Histogram({
      name: 'shoal_scheduler_pass_duration_seconds',
      help: 'Scheduling passes on the leader: from reading the changed sources to their placements and contracts in the log.',
      buckets: [...CONTROL_DURATION_BUCKETS],
      registers
    })
    this.#requests = new Histogram({
      name: 'shoal_api_request_duration_seconds',
      help: 'API requests this replica answered, by method, route and status class, until the response was sent.',
      labelNames: ['method', 'route', 'code'],
      buckets: [...CONTROL_DURATION_BUCKETS],
      registers
    })
    this.#refresh = this.#perSourceGauges(view, registers, options.maxSourceLabels ?? DEFAULT_MAX_SOURCE_LABELS)
  }

  /**
   * The per-source gauges (leader only), and the function that fills them before a scrape: at most `max` sources
   * keep a label of their own.
   */
  #perSourceGauges(view: ControllerView, registers: Registry[], max: number): () => void {
    const labels = ['source', 'kind'] as const
    const desired = new Gauge({
      name: 'shoal_source_consumers_desired',
      help: 'vreplicas the scheduler was asked to place (spec.consumers, or the autoscaler’s choice); 1 for a PingSource.',
      labelNames: labels,
      registers
    })
    const placed = new Gauge({
      name: 'shoal_source_consumers_placed',
      help: 'vreplicas placed on dispatchers.',
      labelNames: labels,
      registers
    })
    const pending = new Gauge({
      name: 'shoal_source_consumers_pending',
      help: 'vreplicas the scheduler could not place (Scheduled=False).',
      labelNames: labels,
      registers
    })
    const lag = new Gauge({
      name: 'shoal_source_lag',
      help: 'Records between a KafkaSource group’s committed offsets and the last stable offsets of its partitions.',
      labelNames: labels,
      registers
    })
    const labelled = new Gauge({
      name: 'shoal_controller_sources_labelled',
      help: 'Sources with a source label of their own on this replica’s per-source gauges (the rest are _other).',
      registers
    })
    // The per-source gauges are filled together before each scrape, so they always name the same sources.
    return () => {
      for (const gauge of [desired, placed, pending, lag]) gauge.reset()
      if (!view.leader()) {
        this.#labelled = new Set()
        labelled.set(0)
        return
      }
      const sources = view.sources()
      const readings = view.lag()
      const scores = new Map<string, number>()
      // Sources with pending vreplicas first (what an operator looks for), then by lag.
      for (const s of sources) scores.set(s.key, s.pending > 0 ? 1e15 + s.pending : (readings.get(s.key)?.lag ?? 0))
      this.#labelled = rankSources(scores, this.#labelled, max)
      const add = (gauge: Gauge<'source' | 'kind'>, key: string, value: number) => {
        const named = sourceLabels(key)
        gauge.inc(this.#labelled.has(key) ? named : { source: OTHER_SOURCE, kind: named.kind }, value)
      }
      for (const s of sources) {
        add(desired, s.key, s.desired)
        add(placed, s.key, s.placed)
        add(pending, s.key, s.pending)
        const reading = readings.get(s.key)
        if (reading) add(lag, s.key, reading.lag)
      }
      labelled.set(this.#labelled.size)
    }
  }

  get contentType(): string {
    return this.registry.contentType
  }

  /** Every metric in the Prometheus text format, the per-source gauges brought up to date first. */
  metrics(): Promise<string> {
    this.#refresh()
    return this.registry.metrics()
  }

  /** A scheduling pass took `seconds`. */
  observePass(seconds: number): void {
    this.#passes.observe(seconds)
  }

  /** An API request was answered. */
  observeRequest(method: string, path: string, status: number, seconds: number): void {
    const known = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD']
    this.#requests.observe(
      {
        method: known.includes(method) ? method : 'other',
        route: routeOf(path),
        code: `${Math.trunc(status / 100)}xx`
      },
      seconds
    )
  }
}
