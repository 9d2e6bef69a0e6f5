import { ApiClient } from './api-client.ts'
import { connectionFlags, connectionFrom, parseFlags, usageError } from './flags.ts'
import { usage } from './help.ts'
import type { CliIo } from './io.ts'
import { itemsOf, listOf, toJson, toYaml } from './output.ts'
import { renderResourceTable } from './printers.ts'
import { fetchLookup, lookupFlags, lookupFrom, noResourcesFound } from './resource-lookup.ts'
import type { Found, Scope } from './resource-lookup.ts'
import { nameOf, namespaceOf, objectReference } from './resources.ts'

const outputFormats = ['wide', 'yaml', 'json', 'name'] as const
type OutputFormat = (typeof outputFormats)[number] | 'table'

const flags = {
  ...connectionFlags,
  ...lookupFlags,
  output: { type: 'string', short: 'o' }
} as const

/** `shoal get` */
export async function runGet(args: readonly string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseFlags(args, flags)
  if (values.help === true) {
    io.stdout.write(usage.get)
    return 0
  }
  const format = outputFormatFrom(values.output)
  const lookup = lookupFrom(positionals, values, 'get')
  const client = new ApiClient(connectionFrom(values, io), io.signal)
  const { found, failed } = await fetchLookup(client, lookup, io)
  if (format === 'wide') await withLag(client, found)

  const { requests, scope, named } = lookup
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
  found: readonly Found[],
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

/**
 * `-o wide` shows each KafkaSource's total lag: a live figure the leader's autoscaler reads (a metric, not stored
 * status), so it is fetched apart and merged into `status.lag` for the table. Without a leader the column is empty.
 */
async function withLag(client: ApiClient, found: Found[]): Promise<void> {
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
