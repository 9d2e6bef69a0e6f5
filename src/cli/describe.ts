import { ApiClient } from './api-client.ts'
import { renderDescribe } from './describe-format.ts'
import { connectionFlags, connectionFrom, parseFlags } from './flags.ts'
import { usage } from './help.ts'
import type { CliIo } from './io.ts'
import { fetchLookup, lookupFlags, lookupFrom, noResourcesFound } from './resource-lookup.ts'

const flags = { ...connectionFlags, ...lookupFlags } as const

/** `shoal describe` */
export async function runDescribe(args: readonly string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseFlags(args, flags)
  if (values.help === true) {
    io.stdout.write(usage.describe)
    return 0
  }
  const lookup = lookupFrom(positionals, values, 'describe')
  const client = new ApiClient(connectionFrom(values, io), io.signal)
  const { found, failed } = await fetchLookup(client, lookup, io)
  const described = found.flatMap(({ objects }) => objects.map(o => renderDescribe(o)))
  if (described.length === 0 && !lookup.named && !failed) io.stderr.write(`${noResourcesFound(lookup.scope)}\n`)
  io.stdout.write(described.join('\n\n'))
  return failed ? 1 : 0
}
