import type { FlowControlRow } from '../api/index.ts'
import type { SinkFlowReport } from '../store/index.ts'

// A source's per-sink flow control as the API shows it (`status.flowControl`): the gates its dispatchers report in
// their heartbeats. The limits live in each dispatcher's deliverer; a heartbeat every second (by default) is how a controller
// learns them.

/** A dispatcher as far as its flow control report goes. */
export interface FlowReporter {
  readonly id: string
  readonly alive: boolean
  readonly sinks?: readonly SinkFlowReport[]
}

/**
 * Every alive dispatcher's gates, by source key, sorted by dispatcher then sink. Pure; `FlowIndex` keeps the last
 * result while no heartbeat brought a new report.
 */
export function flowRowsBySource(dispatchers: readonly FlowReporter[]): Map<string, FlowControlRow[]> {
  const bySource = new Map<string, FlowControlRow[]>()
  for (const d of dispatchers) {
    if (!d.alive) continue
    for (const r of d.sinks ?? []) {
      const rows = bySource.get(r.source) ?? []
      rows.push({
        dispatcher: d.id,
        sink: r.sink,
        adaptive: r.adaptive,
        limit: r.limit,
        inFlight: r.inFlight,
        queued: r.queued,
        ...(r.latencyMs === undefined ? {} : { latencyMs: r.latencyMs })
      })
      bySource.set(r.source, rows)
    }
  }
  for (const rows of bySource.values())
    rows.sort((a, b) => compare(a.dispatcher, b.dispatcher) || compare(a.sink, b.sink))
  return bySource
}

/**
 * The rows of the dispatchers a source is placed on: a gate outlives its source's move away by up to 10 minutes
 * idle (the deliverer's GATE_IDLE_MS), and its limit then says nothing about where the source runs.
 */
export function placedFlowRows(
  rows: readonly FlowControlRow[],
  placements: ReadonlyArray<{ readonly podName: string }>
): FlowControlRow[] {
  const placed = new Set(placements.map(p => p.podName))
  return rows.filter(r => placed.has(r.dispatcher))
}

/**
 * `flowRowsBySource`, built again only when a dispatcher's report changed: every source's presentation reads it,
 * and the members view keeps a heartbeat's `sinks` array as it is until the next heartbeat replaces it.
 */
export class FlowIndex {
  #reports: ReadonlyArray<readonly [string, boolean, readonly SinkFlowReport[] | undefined]> = []
  #index = new Map<string, FlowControlRow[]>()

  /** The rows of `sourceKey` over `dispatchers` (alive ones only). */
  of(dispatchers: readonly FlowReporter[], sourceKey: string): readonly FlowControlRow[] {
    if (this.#changed(dispatchers)) {
      this.#reports = dispatchers.map(d => [d.id, d.alive, d.sinks] as const)
      this.#index = flowRowsBySource(dispatchers)
    }
    return this.#index.get(sourceKey) ?? []
  }

  #changed(dispatchers: readonly FlowReporter[]): boolean {
    if (dispatchers.length !== this.#reports.length) return true
    return dispatchers.some((d, i) => {
      const [id, alive, sinks] = this.#reports[i] ?? []
      return d.id !== id || d.alive !== alive || d.sinks !== sinks
    })
  }
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}
