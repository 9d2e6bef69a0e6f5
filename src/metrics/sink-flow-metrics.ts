import { Gauge } from 'prom-client'
import type { Registry } from 'prom-client'
import type { SinkFlowState } from '../delivery/index.ts'
import { sourceLabels } from './source-labels.ts'

// Per-sink flow control gauges: one series set per source that set the flow control annotations and per sink
// origin it sends to (opt-in sources only, so the count stays that of the sources that asked for it).

/** What the gauges read (a Deliverer fits). */
export interface SinkFlowView {
  flow(): readonly SinkFlowState[]
}

const LABELS = ['source', 'kind', 'sink'] as const

/** Registers the flow control gauges in `registry`, read from `views` at every scrape. */
export function registerSinkFlowMetrics(registry: Registry, views: readonly SinkFlowView[]): void {
  const registers = [registry]
  const gauge = (name: string, help: string, value: (state: SinkFlowState) => number | undefined): void => {
    new Gauge({
      name,
      help,
      labelNames: LABELS,
      registers,
      collect() {
        // Reset first: a gate's source that left this dispatcher loses its series.
        this.reset()
        for (const view of views) {
          for (const state of view.flow()) {
            const v = value(state)
            if (v === undefined) continue
            const { source, kind } = sourceLabels(state.sourceKey)
            this.set({ source, kind, sink: state.sink }, v)
          }
        }
      }
    })
  }
  gauge(
    'shoal_sink_concurrency_limit',
    'Requests in flight a source may have at its sink origin now (explicit or adaptive).',
    s => s.limit
  )
  gauge(
    'shoal_sink_in_flight',
    'Requests of a source on the wire to its sink origin under flow control.',
    s => s.inFlight
  )
  gauge('shoal_sink_queued', 'Requests of a source waiting for its flow control limit or rate.', s => s.queued)
  gauge(
    'shoal_sink_latency_seconds',
    'Smoothed time to an answer from the sink origin (about the last 20 answers).',
    s => (s.latencyMs === undefined ? undefined : s.latencyMs / 1000)
  )
}
