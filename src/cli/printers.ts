import type { KindInfo } from '../api/index.ts'
import { age } from './age.ts'
import { conditionOf, creationTimestampOf, field, nameOf, namespaceOf, objectReference } from './resources.ts'
import { renderTable } from './table.ts'

/** One column of `shoal get`: a header and how to read its cell from an object. */
export interface Column {
  readonly header: string
  readonly cell: (object: unknown, now: number) => string
  /** Shown only with `-o wide`. */
  readonly wide?: boolean
}

/**
 * A printer column's value as kubectl prints a CRD's additionalPrinterColumns: strings as they are,
 * arrays and objects as JSON (`["topic-a","topic-b"]`), nothing for a missing field.
 */
export function cellText(value: unknown): string {
  if (value === undefined || value === null) return ''
  if (typeof value === 'string') return value
  if (typeof value === 'number' || typeof value === 'boolean') return String(value)
  return JSON.stringify(value)
}

const at =
  (...path: string[]) =>
  (object: unknown): string =>
    cellText(field(object, ...path))

const ready = (object: unknown): string => conditionOf(object, 'Ready')?.status ?? ''
const reason = (object: unknown): string => conditionOf(object, 'Ready')?.reason ?? ''
const ageColumn: Column = { header: 'AGE', cell: (object, now) => age(creationTimestampOf(object), now) }

// The columns of Knative's CRDs (additionalPrinterColumns), so the tables read as they do under kubectl.
const columnsByKind: Readonly<Record<string, readonly Column[]>> = {
  KafkaSource: [
    { header: 'TOPICS', cell: at('spec', 'topics') },
    { header: 'BOOTSTRAPSERVERS', cell: at('spec', 'bootstrapServers') },
    { header: 'READY', cell: ready },
    { header: 'REASON', cell: reason },
    ageColumn,
    { header: 'SINK', cell: at('status', 'sinkUri'), wide: true },
    { header: 'CONSUMERS', cell: at('spec', 'consumers'), wide: true },
    // Total lag (from the leader's autoscaler, merged in by `get -o wide`), what was asked and what is placed.
    { header: 'LAG', cell: at('status', 'lag'), wide: true },
    { header: 'DESIRED', cell: at('status', 'desiredConsumers'), wide: true },
    { header: 'PLACED', cell: at('status', 'consumers'), wide: true }
  ],
  PingSource: [
    { header: 'SINK', cell: at('status', 'sinkUri') },
    { header: 'SCHEDULE', cell: at('spec', 'schedule') },
    ageColumn,
    { header: 'READY', cell: ready },
    { header: 'REASON', cell: reason },
    { header: 'TIMEZONE', cell: at('spec', 'timezone'), wide: true }
  ],
  // Desired state (cordoned) and live state (heartbeats), as `kubectl get nodes` mixes them.
  Dispatcher: [
    { header: 'ZONE', cell: at('status', 'zone') },
    { header: 'NODE', cell: at('status', 'node') },
    { header: 'CAPACITY', cell: at('status', 'capacity', 'consumers') },
    { header: 'SCHEDULE-CAPACITY', cell: at('status', 'capacity', 'schedules') },
    { header: 'USED', cell: at('status', 'used', 'consumers') },
    { header: 'SCHEDULES-USED', cell: at('status', 'used', 'schedules') },
    { header: 'STATE', cell: at('status', 'state') },
    { header: 'INCARNATION', cell: at('status', 'incarnation'), wide: true },
    { header: 'LAST-HEARTBEAT', cell: at('status', 'lastHeartbeat'), wide: true }
  ]
}

/** The columns after NAME for a kind; a kind without its own gets READY, REASON and AGE. */
export function columnsFor(info: KindInfo, wide: boolean): readonly Column[] {
  const columns = columnsByKind[info.kind] ?? [
    { header: 'READY', cell: ready },
    { header: 'REASON', cell: reason },
    ageColumn
  ]
  return columns.filter(c => wide || c.wide !== true)
}

export interface TableOptions {
  readonly wide: boolean
  /** `-A`: a NAMESPACE column first. */
  readonly withNamespace: boolean
  /** Several kinds in one listing (`get all`): names read `kafkasource.sources.knative.dev/x`. */
  readonly withKind: boolean
  readonly now: number
}

/** The `shoal get` table of one kind's objects. */
export function renderResourceTable(info: KindInfo, objects: readonly unknown[], options: TableOptions): string {
  const columns = columnsFor(info, options.wide)
  const headers = [...(options.withNamespace ? ['NAMESPACE'] : []), 'NAME', ...columns.map(c => c.header)]
  const rows = objects.map(object => {
    const name = nameOf(object) ?? ''
    return [
      ...(options.withNamespace ? [namespaceOf(object) ?? ''] : []),
      options.withKind ? objectReference(info, name) : name,
      ...columns.map(c => c.cell(object, options.now))
    ]
  })
  return renderTable(headers, rows)
}
