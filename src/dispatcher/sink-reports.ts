import type { SinkFlowState } from '../delivery/index.ts'
import { MAX_SINK_REPORTS } from '../store/index.ts'
import type { SinkFlowReport } from '../store/index.ts'

/** What a heartbeat says of the dispatcher's flow control gates (`MemberRecord.sinks`, `sinksPartial`). */
export interface SinkReports {
  readonly sinks: readonly SinkFlowReport[]
  /** More gates than `max`: the idlest were left out. */
  readonly partial: boolean
}

/**
 * The gates a heartbeat names: the busiest first (requests in flight and queued), then by source and sink, so two
 * heartbeats of an unchanged dispatcher say the same; at most `max`, and latency in whole milliseconds.
 */
export function sinkReportsOf(states: readonly SinkFlowState[], max = MAX_SINK_REPORTS): SinkReports {
  const sorted = [...states].sort(
    (a, b) =>
      b.inFlight + b.queued - (a.inFlight + a.queued) || compare(a.sourceKey, b.sourceKey) || compare(a.sink, b.sink)
  )
  const sinks = sorted.slice(0, max).map((s): SinkFlowReport => ({
    source: s.sourceKey,
    sink: s.sink,
    adaptive: s.adaptive,
    limit: s.limit,
    inFlight: s.inFlight,
    queued: s.queued,
    ...(s.latencyMs === undefined ? {} : { latencyMs: Math.round(s.latencyMs) })
  }))
  return { sinks, partial: sorted.length > max }
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}
