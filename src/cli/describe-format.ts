import type { FlowControlRow, SinkOriginRow } from '../api/index.ts'
import { humanDuration } from './age.ts'
import { conditionsOf, field, isObject, nameOf, namespaceOf, stringMap } from './resources.ts'
import { alignRows, describeLayout } from './table.ts'

type Row = readonly string[]

const acronyms = new Set(['API', 'URL', 'URI', 'UID', 'ID', 'TLS', 'SASL', 'CA', 'CE', 'DNS', 'TTL'])

/**
 * A field name as `kubectl describe` shows it: camelCase split into capitalised words, common acronyms
 * upper-cased (`sinkUri` → `Sink URI`); a name with characters other than letters and `-` stays as it is.
 */
export function fieldLabel(name: string): string {
  if (!/^[A-Za-z-]+$/.test(name)) return name
  const words = name.match(/[A-Z]+(?![a-z])|[A-Z]?[a-z]+|-/g) ?? [name]
  return words
    .filter(w => w !== '-')
    .map(w => (acronyms.has(w.toUpperCase()) ? w.toUpperCase() : w.charAt(0).toUpperCase() + w.slice(1)))
    .join(' ')
}

function scalarText(value: unknown): string {
  if (value === null || value === undefined) return '<none>'
  if (typeof value === 'string') return value.includes('\n') ? JSON.stringify(value) : value
  if (typeof value === 'number' || typeof value === 'boolean') return String(value)
  return JSON.stringify(value)
}

function isEmptyContainer(value: unknown): boolean {
  return (Array.isArray(value) && value.length === 0) || (isObject(value) && Object.keys(value).length === 0)
}

/** Rows for `key: value` at an indentation, nesting maps and lists the way kubectl's generic describer does. */
function fieldRows(label: string, value: unknown, indent: number): Row[] {
  const pad = ' '.repeat(indent)
  if (isEmptyContainer(value) || (!Array.isArray(value) && !isObject(value))) {
    return [[`${pad}${label}:`, isEmptyContainer(value) ? '<none>' : scalarText(value)]]
  }
  return [[`${pad}${label}:`], ...valueRows(value, indent + 2)]
}

function valueRows(value: unknown, indent: number): Row[] {
  if (isObject(value)) return mapRows(value, indent)
  if (!Array.isArray(value)) return [[' '.repeat(indent) + scalarText(value)]]
  return value.flatMap(item => {
    if (!isObject(item) || isEmptyContainer(item)) return [[' '.repeat(indent) + scalarText(item)]]
    // A list of maps: each item's first line is marked `- ` so items stay apart.
    const rows = mapRows(item, indent + 2)
    const [first, ...others] = rows
    if (first === undefined) return rows
    const [cell = '', ...cells] = first
    return [[`${' '.repeat(indent)}- ${cell.slice(indent + 2)}`, ...cells], ...others]
  })
}

function mapRows(map: Readonly<Record<string, unknown>>, indent: number): Row[] {
  return Object.keys(map)
    .sort()
    .flatMap(key => fieldRows(fieldLabel(key), map[key], indent))
}

function labelRows(label: string, map: Readonly<Record<string, string>>): Row[] {
  const entries = Object.keys(map)
    .sort()
    .map(k => `${k}=${map[k] ?? ''}`)
  if (entries.length === 0) return [[`${label}:`, '<none>']]
  return entries.map((entry, i) => [i === 0 ? `${label}:` : '', entry])
}

function flowRowsOf(value: unknown): readonly FlowControlRow[] | undefined {
  if (!Array.isArray(value) || value.length === 0) return undefined
  const rows = value.every(
    (r: unknown) =>
      isObject(r) &&
      typeof r['dispatcher'] === 'string' &&
      typeof r['sink'] === 'string' &&
      typeof r['adaptive'] === 'boolean' &&
      typeof r['limit'] === 'number' &&
      typeof r['inFlight'] === 'number' &&
      typeof r['queued'] === 'number' &&
      (r['latencyMs'] === undefined || typeof r['latencyMs'] === 'number')
  )
  return rows ? (value as FlowControlRow[]) : undefined
}

/** `status.flowControl` as a table: one line per dispatcher and sink, as the conditions are. */
function flowTableRows(flow: readonly FlowControlRow[]): Row[] {
  return [
    ['  Flow Control:'],
    ['    Dispatcher', 'Sink', 'Limit', 'In Flight', 'Queued', 'Latency'],
    ['    ----------', '----', '-----', '---------', '------', '-------'],
    ...flow.map(r => [
      `    ${r.dispatcher}`,
      r.sink,
      r.adaptive ? `adaptive ${r.limit}` : String(r.limit),
      String(r.inFlight),
      String(r.queued),
      r.latencyMs === undefined ? '<none>' : `${r.latencyMs}ms`
    ])
  ]
}

function originRowsOf(value: unknown): readonly SinkOriginRow[] | undefined {
  if (!Array.isArray(value) || value.length === 0) return undefined
  const rows = value.every(
    (r: unknown) =>
      isObject(r) &&
      typeof r['dispatcher'] === 'string' &&
      typeof r['origin'] === 'string' &&
      typeof r['inFlight'] === 'number' &&
      typeof r['oldestInFlightMs'] === 'number' &&
      typeof r['resent'] === 'number' &&
      typeof r['notAccepted'] === 'number'
  )
  return rows ? (value as SinkOriginRow[]) : undefined
}

/** `status.sinkOrigins` as a table: one line per dispatcher and origin, the oldest request in flight as an age. */
function originTableRows(origins: readonly SinkOriginRow[]): Row[] {
  return [
    ['  Sink Origins:'],
    ['    Dispatcher', 'Origin', 'In Flight', 'Oldest', 'Resent', 'Not Accepted'],
    ['    ----------', '------', '---------', '------', '------', '------------'],
    ...origins.map(r => [
      `    ${r.dispatcher}`,
      r.origin,
      String(r.inFlight),
      r.oldestInFlightMs === 0
        ? '<none>'
        : r.oldestInFlightMs < 1000
          ? `${r.oldestInFlightMs}ms`
          : humanDuration(r.oldestInFlightMs),
      String(r.resent),
      String(r.notAccepted)
    ])
  ]
}

/** Status fields shown as tables of their own, in this order, when they read as their rows. */
const statusTables: ReadonlyArray<readonly [string, (value: unknown) => Row[] | undefined]> = [
  ['flowControl', value => mapDefined(flowRowsOf(value), flowTableRows)],
  ['sinkOrigins', value => mapDefined(originRowsOf(value), originTableRows)]
]

function mapDefined<T, U>(value: T | undefined, f: (value: T) => U): U | undefined {
  return value === undefined ? undefined : f(value)
}

const describedMetadata = new Set(['name', 'namespace', 'labels', 'annotations'])
const describedObject = new Set(['apiVersion', 'kind', 'metadata', 'spec', 'status'])

/** The text of `shoal describe` for one object. */
export function renderDescribe(object: unknown): string {
  const metadata = field(object, 'metadata')
  const status = field(object, 'status')
  const rows: Row[] = [
    ['Name:', nameOf(object) ?? ''],
    ['Namespace:', namespaceOf(object) ?? ''],
    ...labelRows('Labels', stringMap(object, 'labels')),
    ...labelRows('Annotations', stringMap(object, 'annotations')),
    ['API Version:', scalarText(field(object, 'apiVersion'))],
    ['Kind:', scalarText(field(object, 'kind'))]
  ]
  if (isObject(metadata)) {
    const rest = Object.fromEntries(Object.entries(metadata).filter(([k]) => !describedMetadata.has(k)))
    if (Object.keys(rest).length > 0) rows.push(['Metadata:'], ...mapRows(rest, 2))
  }
  const spec = field(object, 'spec')
  rows.push(...fieldRows('Spec', spec ?? {}, 0))
  if (isObject(object)) {
    for (const key of Object.keys(object).sort()) {
      if (!describedObject.has(key)) rows.push(...fieldRows(fieldLabel(key), object[key], 0))
    }
  }
  const statusRest = isObject(status)
    ? Object.fromEntries(Object.entries(status).filter(([k]) => k !== 'conditions'))
    : {}
  // Tables of their own, last in Status: a line that is not a `key: value` pair ends its columns' alignment.
  const tables: Row[] = []
  for (const [key, tableOf] of statusTables) {
    const table = tableOf(statusRest[key])
    if (table === undefined) continue
    delete statusRest[key]
    tables.push(...table)
  }
  if (tables.length === 0) rows.push(...fieldRows('Status', statusRest, 0))
  else {
    rows.push(...(Object.keys(statusRest).length > 0 ? fieldRows('Status', statusRest, 0) : [['Status:']]))
    rows.push(...tables)
  }
  const conditions = conditionsOf(object)
  if (conditions.length === 0) {
    rows.push(['Conditions:', '<none>'])
  } else {
    rows.push(['Conditions:'], ['  Type', 'Status', 'Reason', 'Message', 'Last Transition'])
    rows.push(['  ----', '------', '------', '-------', '---------------'])
    for (const c of conditions) {
      rows.push([`  ${c.type}`, c.status, c.reason ?? '', c.message ?? '', c.lastTransitionTime ?? ''])
    }
  }
  return alignRows(rows, describeLayout)
    .map(line => `${line}\n`)
    .join('')
}
