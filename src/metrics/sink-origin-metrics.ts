import { Counter, Gauge } from 'prom-client'
import type { Registry } from 'prom-client'
import type { OriginFigures } from '../delivery/index.ts'

// Per sink origin series, over every source of the dispatcher: the connections and requests a stalled sink holds.
// One series set per origin the dispatcher ever sent to (its deliverer keeps an origin for its life, so a counter
// never goes back), for every source, flow control or not: the origins are the sinks and dead letter sinks.

/** What the series read (a Deliverer fits). */
export interface SinkOriginView {
  sinks(): readonly OriginFigures[]
}

const LABELS = ['sink'] as const

/** Registers the per-origin gauges and counters in `registry`, read from `views` at every scrape. */
export function registerSinkOriginMetrics(registry: Registry, views: readonly SinkOriginView[]): void {
  const registers = [registry]
  // Several views of one origin (several deliverers in one registry) add up; the oldest request is the oldest.
  const figures = (value: (f: OriginFigures) => number, combine: (a: number, b: number) => number) => {
    const byOrigin = new Map<string, number>()
    for (const view of views) {
      for (const f of view.sinks()) {
        const before = byOrigin.get(f.origin)
        byOrigin.set(f.origin, before === undefined ? value(f) : combine(before, value(f)))
      }
    }
    return byOrigin
  }
  const sum = (a: number, b: number) => a + b
  const gauge = (name: string, help: string, value: (f: OriginFigures) => number, combine = sum): void => {
    new Gauge({
      name,
      help,
      labelNames: LABELS,
      registers,
      collect() {
        this.reset()
        for (const [sink, v] of figures(value, combine)) this.set({ sink }, v)
      }
    })
  }
  // The figures are totals since the deliverer started: the counter shows them as they are.
  const counter = (name: string, help: string, value: (f: OriginFigures) => number): void => {
    new Counter({
      name,
      help,
      labelNames: LABELS,
      registers,
      collect() {
        this.reset()
        for (const [sink, v] of figures(value, sum)) this.inc({ sink }, v)
      }
    })
  }
  gauge(
    'shoal_sink_oldest_in_flight_seconds',
    'How long the oldest request in flight to the sink origin has been (0: none): a stalled sink keeps it growing.',
    f => f.oldestInFlightMs / 1000,
    Math.max
  )
  gauge(
    'shoal_sink_origin_in_flight',
    'Requests to the sink origin holding a connection slot (connecting, on the wire or waiting for the answer), over every source.',
    f => f.inFlight
  )
  gauge(
    'shoal_sink_origin_queued',
    'Requests to the sink origin waiting for a connection slot, over every source.',
    f => f.queued
  )
  counter(
    'shoal_sink_requests_resent_total',
    'Requests sent to the sink origin again because the sink never read them or no connection could be had (no retry used).',
    f => f.resent
  )
  counter(
    'shoal_sink_connections_not_accepted_total',
    'Connections to the sink origin that the sink never accepted (its accept backlog dropped them); each request was sent again.',
    f => f.notAccepted
  )
}
