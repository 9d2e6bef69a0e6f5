import type { KindInfo } from '../api/index.ts'
import { ApiClient } from './api-client.ts'
import { serverErrorLine } from './api-status.ts'
import { connectionFlags, connectionFrom, namespaceFrom, parseFlags, usageError } from './flags.ts'
import { usage } from './help.ts'
import type { CliIo } from './io.ts'
import { itemsOf, listOf, toJson, toYaml, withTypeMeta } from './output.ts'
import { renderResourceTable } from './printers.ts'
import { parseResourceArgs } from './resource-args.ts'
import { byNamespaceAndName, nameOf, namespaceOf, objectReference, stringMap } from './resources.ts'
import { matchesSelector, parseSelector, serverSelector } from '../api/index.ts'
import type { Requirement } from '../api/index.ts'

const outputFormats = ['wide', 'yaml', 'json', 'name'] as const
type OutputFormat = (typeof outputFormats)[number] | 'table'

const flags = {
  ...connectionFlags,
  namespace: { type: 'string', short: 'n' },
  'all-namespaces': { type: 'boolean', short: 'A' },
  selector: { type: 'string', short: 'l' },
  output: { type: 'string', short: 'o' }
} as const

/** The selector given with -l, checked; a usage error names what is wrong in it. */
export function selectorFrom(raw: string | undefined): readonly Requirement[] | undefined {
  if (raw === undefined) return undefined
  const parsed = parseSelector(raw)
  if (!parsed.ok) throw usageError(parsed.message)
  return parsed.requirements
}

/** Where a listing looks: one namespace, or all of them. */
export interface Scope {
  readonly namespace: string
  readonly allNamespaces: boolean
}

/** `shoal get` */
export async function runGet(args: readonly string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseFlags(args, flags)
  if (values.help === true) {
    io.stdout.write(usage.get)
    return 0
  }
  const format = outputFormatFrom(values.output)
  const requests = parseResourceArgs(positionals, 'get')
  const scope: Scope = { namespace: namespaceFrom(values.namespace), allNamespaces: values['all-namespaces'] === true }
  const selector = selectorFrom(values.selector)
  const named = requests.some(r => r.names.length > 0)
  if (named && scope.allNamespaces) throw usageError('a resource cannot be retrieved by name across all namespaces')
  if (named && selector !== undefined) throw usageError('a selector (-l) cannot be combined with resource names')
  const client = new ApiClient(connectionFrom(values, io), io.signal)

  let failed = false
  const found: { kind: KindInfo; objects: unknown[] }[] = []
  for (const { kind, names } of requests) {
    const objects: unknown[] = []
    if (names.length === 0) {
      const namespace = scope.allNamespaces ? undefined : scope.namespace
      const result = await client.list(kind, namespace, selector === undefined ? undefined : serverSelector(selector))
      if (!result.ok) {
        io.stderr.write(`${serverErrorLine(result.status)}\n`)
        failed = true
        continue
      }
      const items = itemsOf(result.body).filter(
        o => selector === undefined || matchesSelector(selector, stringMap(o, 'labels'))
      )
      objects.push(...items.sort(byNamespaceAndName))
    } else {
      for (const name of names) {
        const result = await client.get(kind, scope.namespace, name)
        if (result.ok) {
          objects.push(result.body)
        } else {
          io.stderr.write(`${serverErrorLine(result.status)}\n`)
          failed = true
        }
      }
    }
    found.push({ kind, objects: objects.map(o => withTypeMeta(kind, o)) })
  }
  if (format === 'wide') await withLag(client, found)

  printFound(found, format, { scope, single: requests.length === 1 && requests[0]?.names.length === 1, named }, io)
  return failed ? 1 : 0
}

function outputFormatFrom(raw: string | undefined): OutputFormat {
  if (raw === undefined) return 'table'
  const format = outputFormats.find(f => f === raw)
  if (format === undefined) {
    throw usageError(
      `unable to match a printer suitable for the output format "${raw}", allowed formats are: ${outputFormats.join(',')}`
    )
  }
  return format
}

function printFound(
  found: readonly { kind: KindInfo; objects: readonly unknown[] }[],
  format: OutputFormat,
  context: { scope: Scope; single: boolean; named: boolean },
  io: CliIo
): void {
  const all = found.flatMap(f => f.objects)
  if (format === 'json' || format === 'yaml') {
    const document = context.single && all.length === 1 ? all[0] : listOf(all)
    io.stdout.write(format === 'json' ? toJson(document) : toYaml(document))
    return
  }
  if (all.length === 0) {
    // Names that were not found have had their errors printed already.
    if (!context.named) io.stderr.write(`${noResourcesFound(context.scope)}\n`)
    return
  }
  if (format === 'name') {
    for (const { kind, objects } of found) {
      for (const object of objects) io.stdout.write(`${objectReference(kind, nameOf(object) ?? '')}\n`)
    }
    return
  }
  const nonEmpty = found.filter(f => f.objects.length > 0)
  const tables = nonEmpty.map(({ kind, objects }) =>
    renderResourceTable(kind, objects, {
      wide: format === 'wide',
      withNamespace: context.scope.allNamespaces,
      withKind: found.length > 1,
      now: io.now()
    })
  )
  io.stdout.write(tables.join('\n'))
}

export function noResourcesFound(scope: Scope): string {
  return scope.allNamespaces ? 'No resources found' : `No resources found in ${scope.namespace} namespace.`
}

/**
 * `-o wide` shows each KafkaSource's total lag: a live figure the leader's autoscaler reads (a metric, not stored
 * status), so it is fetched apart and merged into `status.lag` for the table. Without a leader the column is empty.
 */
async function withLag(client: ApiClient, found: { kind: KindInfo; objects: unknown[] }[]): Promise<void> {
  const sources = found.find(f => f.kind.kind === 'KafkaSource')
  if (!sources || sources.objects.length === 0) return
  const answer = await client.getPath('/shoal/v1/autoscaling').catch(() => undefined)
  if (!answer?.ok) return
  const lagOf = new Map<string, number>()
  for (const item of itemsOf(answer.body) as Array<{ source?: string; lag?: number }>) {
    if (typeof item.source === 'string' && typeof item.lag === 'number') lagOf.set(item.source, item.lag)
  }
  sources.objects = sources.objects.map(o => {
    const lag = lagOf.get(`KafkaSource/${namespaceOf(o) ?? ''}/${nameOf(o) ?? ''}`)
    if (lag === undefined) return o
    const object = o as { status?: Record<string, unknown> }
    return { ...object, status: { ...(object.status ?? {}), lag } }
  })
}
