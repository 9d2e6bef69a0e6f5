import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client'
import type { DeliveryObserver } from '../delivery/index.ts'
import type { SourceObserver } from '../kafka-source/index.ts'
import { registerSinkFlowMetrics } from './sink-flow-metrics.ts'
import type { SinkFlowView } from './sink-flow-metrics.ts'
import { registerSinkOriginMetrics } from './sink-origin-metrics.ts'
import type { SinkOriginView } from './sink-origin-metrics.ts'
import { SourceMetrics } from './source-metrics.ts'
import type { SourceActivity } from './source-metrics.ts'

/** Slot kinds, as contracts name them. */
export type Slot = 'consumer' | 'schedule'

/** What the metrics read from a running dispatcher (RunningDispatcher fits). */
export interface DispatcherView {
  readonly id: string
  readonly contract: ReadonlyMap<string, { readonly slot: Slot; readonly vreplicas: number }>
  readonly contractOffset: bigint
  readonly running: boolean
  readonly fenced: boolean
  /** How many times it has fenced itself. */
  readonly fences: number
}

/** A data plane whose sources the metrics show (KafkaSourcePlane fits). */
export interface SourcesView {
  status(): readonly SourceActivity[]
}

export interface DispatcherMetricsOptions {
  readonly dispatcher: DispatcherView
  /** Slots the dispatcher offers (its --capacity and --schedule-capacity). */
  readonly capacity: Readonly<Record<Slot, number>>
  /** Sources with a `source` label of their own (default DEFAULT_MAX_SOURCE_LABELS); the rest are `_other`. */
  readonly maxSourceLabels?: number
  /** How often, at most, the labelled sources are chosen again (default DEFAULT_RANK_INTERVAL_MS). */
  readonly rankIntervalMs?: number
  /** Also Node.js's process metrics (CPU, memory, event loop): for a process that runs one dispatcher. */
  readonly processMetrics?: boolean
  readonly now?: () => number
}

/** What /healthz answers. */
export interface HealthReport {
  readonly ok: boolean
  readonly status: string
}

/**
 * One dispatcher's metrics in a registry of its own (never prom-client's global one: several dispatchers may run
 * in one process), every series labelled `dispatcher`. Hand `observer` to the Deliverer, `track` the data planes,
 * and serve `metrics()`.
 */
export class DispatcherMetrics {
  readonly registry = new Registry()
  readonly observer: DeliveryObserver & SourceObserver
  readonly #dispatcher: DispatcherView
  readonly #sources: SourceMetrics
  readonly #planes: SourcesView[] = []
  readonly #sinks: SinkFlowView[] = []
  readonly #origins: SinkOriginView[] = []
  readonly #now: () => number

  constructor(options: DispatcherMetricsOptions) {
    this.#dispatcher = options.dispatcher
    this.#now = options.now ?? Date.now
    this.registry.setDefaultLabels({ dispatcher: options.dispatcher.id })
    if (options.processMetrics === true) collectDefaultMetrics({ register: this.registry })
    this.#sources = new SourceMetrics(this.registry, {
      ...(options.maxSourceLabels === undefined ? {} : { maxSourceLabels: options.maxSourceLabels }),
      ...(options.rankIntervalMs === undefined ? {} : { rankIntervalMs: options.rankIntervalMs })
    })
    this.observer = this.#sources
    const registers = [this.registry]
    registerSinkFlowMetrics(this.registry, this.#sinks)
    registerSinkOriginMetrics(this.registry, this.#origins)
    const dispatcher = this.#dispatcher
    new Gauge({
      name: 'shoal_dispatcher_capacity',
      help: 'Slots this dispatcher offers, by kind: consumer (KafkaSource vreplicas) and schedule (PingSources).',
      labelNames: ['slot'],
      registers,
      collect() {
        for (const slot of SLOTS) this.set({ slot }, options.capacity[slot])
      }
    })
    new Gauge({
      name: 'shoal_dispatcher_used',
      help: 'Slots its contract fills, by kind.',
      labelNames: ['slot'],
      registers,
      collect() {
        const used: Record<Slot, number> = { consumer: 0, schedule: 0 }
        for (const placement of dispatcher.contract.values()) used[placement.slot] += placement.vreplicas
        for (const slot of SLOTS) this.set({ slot }, used[slot])
      }
    })
    new Gauge({
      name: 'shoal_dispatcher_contract_offset',
      help: 'The highest offset of its contracts partition applied (-1 before any).',
      registers,
      collect() {
        this.set(Number(dispatcher.contractOffset))
      }
    })
    new Gauge({
      name: 'shoal_dispatcher_fenced',
      help: '1 while it is fenced (no heartbeat acknowledged for half the liveness timeout: its contract stopped), else 0.',
      registers,
      collect() {
        this.set(dispatcher.fenced ? 1 : 0)
      }
    })
    new Counter({
      name: 'shoal_dispatcher_fences_total',
      help: 'Times it fenced itself. A healthy dispatcher fencing during a broker failover means the brokers hold acks=all writes longer than its liveness timeout allows (docs/kafka.md).',
      registers,
      collect() {
        this.reset()
        this.inc(dispatcher.fences)
      }
    })
  }

  /** The Prometheus text format's content type. */
  get contentType(): string {
    return this.registry.contentType
  }

  /** Shows the in-flight records of a data plane's sources. */
  track(plane: SourcesView): void {
    this.#planes.push(plane)
  }

  /** Shows the per-sink flow control of a deliverer. */
  trackSinks(view: SinkFlowView): void {
    this.#sinks.push(view)
  }

  /** Shows a deliverer's connections to each sink origin: the oldest request in flight, requests sent again. */
  trackOrigins(view: SinkOriginView): void {
    this.#origins.push(view)
  }

  /** Every metric in the Prometheus text format, gauges brought up to date first. */
  async metrics(): Promise<string> {
    this.#sources.refresh(
      this.#planes.flatMap(plane => plane.status()),
      this.#now()
    )
    return this.registry.metrics()
  }

  /** Healthy while running or fenced (fencing heals itself once Kafka answers); not once stopped for good. */
  health(): HealthReport {
    if (this.#dispatcher.fenced) return { ok: true, status: 'fenced' }
    return this.#dispatcher.running ? { ok: true, status: 'running' } : { ok: false, status: 'stopped' }
  }
}

const SLOTS: readonly Slot[] = ['consumer', 'schedule']
