import type { SinkOriginFigures, SinkOriginRow } from '../api/index.ts'

// A source's sink origins as the API shows them (`status.sinkOrigins`): each dispatcher's heartbeat reports its
// connections to every origin it sends to, over all its sources (the connections and their cap are shared); a
// source shows those of the dispatchers it is placed on, towards its own sink and dead letter sink.

/** The origins (`http://host:port`) of the URIs a source sends to; a URI that does not parse has none. */
export function originsOf(uris: ReadonlyArray<string | undefined>): Set<string> {
  const origins = new Set<string>()
  for (const uri of uris) {
    if (uri === undefined || !URL.canParse(uri)) continue
    origins.add(new URL(uri).origin)
  }
  return origins
}

/**
 * The rows of the dispatchers a source is placed on (`originsOn` answers for alive ones only) towards `origins`,
 * sorted by dispatcher then origin: at most placements × 2 rows, however many origins a dispatcher serves.
 */
export function sinkOriginRows(
  placements: ReadonlyArray<{ readonly podName: string }>,
  originsOn: (dispatcher: string) => readonly SinkOriginFigures[] | undefined,
  origins: ReadonlySet<string>
): SinkOriginRow[] {
  if (origins.size === 0) return []
  const rows: SinkOriginRow[] = []
  for (const dispatcher of new Set(placements.map(p => p.podName))) {
    for (const figures of originsOn(dispatcher) ?? []) {
      if (!origins.has(figures.origin)) continue
      rows.push({
        dispatcher,
        origin: figures.origin,
        inFlight: figures.inFlight,
        oldestInFlightMs: figures.oldestInFlightMs,
        resent: figures.resent,
        notAccepted: figures.notAccepted
      })
    }
  }
  return rows.sort((a, b) => compare(a.dispatcher, b.dispatcher) || compare(a.origin, b.origin))
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}
