// PingSource ticks as a user's sink sees them, counted against an independent truth: a sink that records every
// event (its nominal `ce-time`, arrival, late mark) per source, PingSources firing every second created through
// the API, and the counting — per source, per nominal second of a window, which seconds never arrived (not even
// late) and which arrived more than once. Shared by the churn test (test/ping-source/ping-churn.test.ts) and the failure
// drills (test/faults/), so both count the same way.
import { once } from 'node:events'
import { createServer } from 'node:http'
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { LATE_EXTENSION } from '../../src/ping-source/index.ts'
import { startPythonSink } from '../sinks/python-sink.ts'
import type { PythonSink } from '../sinks/python-sink.ts'
import { http } from './http.ts'
import { eventually } from './wait.ts'

export const PS = '/apis/sources.knative.dev/v1/namespaces/default/pingsources'
const LATE_HEADER = `ce-${LATE_EXTENSION}`

// ---- the sink ----

/** One event at the sink. */
export interface TickArrival {
  /** The nominal tick (`ce-time`), ms since the epoch. */
  readonly nominalMs: number
  readonly atMs: number
  /** Marked `ce-shoallate: true`: fired by catch-up. */
  readonly late: boolean
  /** The sender's address (in the network lab, each dispatcher host has its own). */
  readonly from?: string
}

/** How a TickSink answers: after `delayMs` (0: at once), on Node's server or Python's standard-library one. */
export interface TickSinkOptions {
  readonly delayMs?: number
  /** test/sinks/python_sink.py (the CloudEvents SDK over ThreadingHTTPServer, listen backlog 5), on loopback. */
  readonly python?: boolean
}

/**
 * An HTTP sink that answers 202 to everything and records each event by source (its path; for the Python sink, the
 * last segment of its `source`), as it arrives.
 */
export class TickSink {
  readonly #arrivals = new Map<string, TickArrival[]>()
  #server: Server | undefined
  #python: PythonSink | undefined
  #host = '127.0.0.1'

  /** Listens on a free port of `host` (loopback by default; the network lab's sink host address there). */
  async start(host = '127.0.0.1', options: TickSinkOptions = {}): Promise<this> {
    this.#host = host
    const delayMs = options.delayMs ?? 0
    if (options.python) {
      this.#python = await startPythonSink(['--trace', '--delay-ms', String(delayMs)], line => {
        if (line.kind !== 'arrived') return
        const { source = '', time, [LATE_EXTENSION]: late } = line.attributes
        this.#arrived(source.slice(source.lastIndexOf('/') + 1), time, late === 'true', '?')
      })
      return this
    }
    const server = createServer((req, res) => {
      req.resume()
      req.on('end', () => {
        const source = (req.url ?? '/').split('/')[1] ?? ''
        const time = req.headers['ce-time'] as string | undefined
        this.#arrived(source, time, req.headers[LATE_HEADER] === 'true', req.socket.remoteAddress ?? '?')
        if (delayMs === 0) res.writeHead(202).end()
        else setTimeout(() => res.writeHead(202).end(), delayMs)
      })
    })
    server.listen(0, host)
    await once(server, 'listening')
    this.#server = server
    return this
  }

  #arrived(source: string, time: string | undefined, late: boolean, from: string): void {
    let mine = this.#arrivals.get(source)
    if (mine === undefined) this.#arrivals.set(source, (mine = []))
    mine.push({ nominalMs: Date.parse(String(time)), atMs: Date.now(), late, from })
  }

  url(source: string): string {
    if (this.#python) return `${this.#python.url}${source}`
    return `http://${this.#host}:${(this.#server!.address() as AddressInfo).port}/${source}`
  }

  arrivals(source: string): readonly TickArrival[] {
    return this.#arrivals.get(source) ?? []
  }

  async close(): Promise<void> {
    await this.#python?.stop()
    this.#python = undefined
    const server = this.#server
    this.#server = undefined
    if (server === undefined) return
    server.closeAllConnections()
    await new Promise(resolve => server.close(resolve))
  }
}

// ---- counting ----

/** The nominal seconds counted for a source: [fromMs, toMs], both whole seconds. */
export interface TickWindow {
  readonly fromMs: number
  readonly toMs: number
}

/** From the first whole second after the source was seen Ready to the last whole second at or before `stopMs`. */
export function tickWindow(readyMs: number, stopMs: number): TickWindow {
  return { fromMs: Math.floor(readyMs / 1000) * 1000 + 1000, toMs: Math.floor(stopMs / 1000) * 1000 }
}

/** The truth for `* * * * * *`: every second of the window, computed without Shoal's cron code. */
export function everySecondOf(window: TickWindow): number[] {
  const seconds: number[] = []
  for (let s = window.fromMs; s <= window.toMs; s += 1000) seconds.push(s)
  return seconds
}

/** One source's figures over its window. */
export interface TickFigures {
  readonly source: string
  /** Seconds in the window: the ticks that must arrive. */
  readonly expected: number
  /** Events whose nominal second is in the window (every copy). */
  readonly events: number
  /** Nominal seconds (ms) of the window that never arrived, not even late. */
  readonly missing: readonly number[]
  /** Nominal seconds (ms) of the window that arrived more than once. */
  readonly duplicated: readonly number[]
  /** When the second copy of each duplicated second arrived (ms), in the same order: what caused it. */
  readonly againAt: readonly number[]
  /** Copies beyond the first, over the duplicated seconds. */
  readonly extra: number
  /** Events of the window marked late. */
  readonly late: number
}

/** Counts a source's arrivals against `truth` (the nominal seconds that must arrive, sorted). */
export function countTicks(source: string, arrivals: readonly TickArrival[], truth: readonly number[]): TickFigures {
  const wanted = new Set(truth)
  const copies = new Map<number, number>()
  const again = new Map<number, number>()
  let events = 0
  let late = 0
  for (const a of arrivals) {
    if (!wanted.has(a.nominalMs)) continue
    events++
    if (a.late) late++
    const n = (copies.get(a.nominalMs) ?? 0) + 1
    copies.set(a.nominalMs, n)
    if (n === 2) again.set(a.nominalMs, a.atMs)
  }
  const duplicated = truth.filter(s => again.has(s))
  return {
    source,
    expected: truth.length,
    events,
    missing: truth.filter(s => !copies.has(s)),
    duplicated,
    againAt: duplicated.map(s => again.get(s)!),
    extra: duplicated.reduce((n, s) => n + copies.get(s)! - 1, 0),
    late
  }
}

/** Counts every source of `windows` at `sink`. */
export function countAll(sink: TickSink, windows: ReadonlyMap<string, TickWindow>): TickFigures[] {
  return [...windows].map(([source, window]) => countTicks(source, sink.arrivals(source), everySecondOf(window)))
}

/**
 * Waits until no second of any window is missing (late ticks still on their way arrive), or `timeoutMs`, then
 * counts: the assertion is on the figures, not on the wait.
 */
export async function settleTicks(
  sink: TickSink,
  windows: ReadonlyMap<string, TickWindow>,
  timeoutMs = 30_000
): Promise<TickFigures[]> {
  try {
    await eventually(
      async () => (countAll(sink, windows).every(f => f.missing.length === 0) ? true : undefined),
      timeoutMs,
      'every second of every window at the sink'
    )
  } catch {
    // The figures say what is missing; the caller's assertion fails on them.
  }
  return countAll(sink, windows)
}

/** The sum over sources (`source` names how many). */
export function totalTicks(figures: readonly TickFigures[]): TickFigures {
  return {
    source: `${figures.length} sources`,
    expected: figures.reduce((n, f) => n + f.expected, 0),
    events: figures.reduce((n, f) => n + f.events, 0),
    missing: figures.flatMap(f => f.missing),
    duplicated: figures.flatMap(f => f.duplicated),
    againAt: figures.flatMap(f => f.againAt),
    extra: figures.reduce((n, f) => n + f.extra, 0),
    late: figures.reduce((n, f) => n + f.late, 0)
  }
}

/** Nominal seconds as seconds from `originMs`, runs collapsed: `3, 12–21`. */
export function secondRanges(seconds: readonly number[], originMs: number): string {
  const xs = [...new Set(seconds.map(s => Math.round((s - originMs) / 1000)))].sort((a, b) => a - b)
  const out: string[] = []
  for (let i = 0; i < xs.length;) {
    let j = i
    while (j + 1 < xs.length && xs[j + 1] === xs[j]! + 1) j++
    out.push(i === j ? `${xs[i]}` : `${xs[i]}–${xs[j]}`)
    i = j + 1
  }
  return out.join(', ')
}

/**
 * A compact table, one `# ` line per source (diagnostic lines under the test runner): expected, missing and
 * duplicated seconds (counts, and the seconds from `originMs`), late-marked events, and a note per source.
 */
export function tickTable(
  figures: readonly TickFigures[],
  originMs: number,
  notes: ReadonlyMap<string, string> = new Map()
): string {
  const head = ['source', 'expected', 'missing', 'dup', 'late', 'missing s', 'dup s', ...(notes.size ? ['note'] : [])]
  const rows = figures.map(f => [
    f.source,
    String(f.expected),
    String(f.missing.length),
    String(f.duplicated.length),
    String(f.late),
    secondRanges(f.missing, originMs) || '-',
    secondRanges(f.duplicated, originMs) || '-',
    ...(notes.size ? [notes.get(f.source) ?? ''] : [])
  ])
  const all = [head, ...rows]
  const width = head.map((_, i) => Math.max(...all.map(r => r[i]!.length)))
  const numeric = (i: number) => i >= 1 && i <= 4
  return all
    .map(r => `# ${r.map((v, i) => (numeric(i) ? v.padStart(width[i]!) : v.padEnd(width[i]!))).join('  ')}`.trimEnd())
    .join('\n')
}

// ---- PingSources through the API ----

/** A PingSource firing every second (`* * * * * *`) to `sink`. */
export function everySecondManifest(name: string, sink: string): string {
  return [
    'apiVersion: sources.knative.dev/v1',
    'kind: PingSource',
    `metadata: {name: ${name}}`,
    'spec:',
    '  schedule: "* * * * * *"',
    `  sink: {uri: "${sink}"}`,
    ''
  ].join('\n')
}

/** Creates one every-second PingSource per name, to `sink.url(name)`. */
export async function createEverySecondSources(api: string, names: readonly string[], sink: TickSink): Promise<void> {
  for (const name of names) {
    const created = await http('POST', `${api}${PS}`, everySecondManifest(name, sink.url(name)))
    if (created.status !== 201) throw new Error(`creating ${name}: ${created.status} ${JSON.stringify(created.body)}`)
  }
}

/** Waits until every named PingSource is Ready; returns when each was first seen Ready (ms). */
export async function readyTimes(
  api: string,
  names: readonly string[],
  timeoutMs = 60_000
): Promise<Map<string, number>> {
  const ready = new Map<string, number>()
  await eventually(
    async () => {
      for (const name of names) {
        if (ready.has(name)) continue
        const answer = await http('GET', `${api}${PS}/${name}`)
        const condition = (answer.body?.status?.conditions ?? []).find((c: { type: string }) => c.type === 'Ready')
        if (condition?.status === 'True') ready.set(name, Date.now())
      }
      return ready.size === names.length ? true : undefined
    },
    timeoutMs,
    `PingSources ${names.join(', ')} Ready`
  )
  return ready
}

/** Each PingSource's dispatcher (`-` when unplaced), as its status shows it. */
export async function pingPlacements(api: string): Promise<Map<string, string>> {
  const items = ((await http('GET', `${api}${PS}`)).body?.items ?? []) as Array<{
    metadata: { name: string }
    status?: { placements?: Array<{ podName?: string }> }
  }>
  return new Map(items.map(s => [s.metadata.name, s.status?.placements?.[0]?.podName ?? '-']))
}
