import type { SinkOriginFigures } from '../api/index.ts'
import type { OriginFigures, SinkFlowState } from '../delivery/index.ts'
import { MAX_ORIGIN_REPORTS, MAX_SINK_REPORTS } from '../store/index.ts'
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

/** What a heartbeat says of the dispatcher's connections to sink origins (`MemberRecord.origins`, `originsPartial`). */
export interface OriginReports {
  readonly origins: readonly SinkOriginFigures[]
  /** More origins than `max`: the idlest were left out. */
  readonly partial: boolean
}

/**
 * The origins a heartbeat names: the most stalled first (the oldest request in flight), then the busiest, then by
 * name; at most `max`. An origin that ever sent a request again stays before one that never did, so a sink that
 * dropped connections is not hidden by many idle ones.
 */
export function originReportsOf(figures: readonly OriginFigures[], max = MAX_ORIGIN_REPORTS): OriginReports {
  const sorted = [...figures].sort(
    (a, b) =>
      b.oldestInFlightMs - a.oldestInFlightMs ||
      b.inFlight - a.inFlight ||
      Number(b.resent > 0) - Number(a.resent > 0) ||
      compare(a.origin, b.origin)
  )
  const origins = sorted.slice(0, max).map((f): SinkOriginFigures => ({
    origin: f.origin,
    inFlight: f.inFlight,
    oldestInFlightMs: Math.round(f.oldestInFlightMs),
    resent: f.resent,
    notAccepted: f.notAccepted
  }))
  return { origins, partial: sorted.length > max }
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}
