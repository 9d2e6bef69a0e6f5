import { readFileSync } from 'node:fs'
import { ApiClient } from './api-client.ts'
import { serverErrorLine } from './api-status.ts'
import { connectionFlags, connectionFrom, parseFlags, usageError } from './flags.ts'
import { usage } from './help.ts'
import type { CliIo } from './io.ts'
import { toJson, toYaml } from './output.ts'
import { field } from './resources.ts'

const flags = {
  ...connectionFlags,
  client: { type: 'boolean' },
  output: { type: 'string', short: 'o' }
} as const

/** This package's version (src/cli and dist/cli both sit two levels below package.json). */
export function clientVersion(): string {
  try {
    const text = readFileSync(new URL('../../package.json', import.meta.url), 'utf8')
    const version = (JSON.parse(text) as { version?: unknown }).version
    return typeof version === 'string' ? version : 'unknown'
  } catch {
    return 'unknown'
  }
}

/** `shoal version`: the server's version is the `info.version` of its /openapi.json. */
export async function runVersion(args: readonly string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseFlags(args, flags)
  if (values.help === true) {
    io.stdout.write(usage.version)
    return 0
  }
  const [unexpected] = positionals
  if (unexpected !== undefined) throw usageError(`unexpected argument "${unexpected}"`)
  const format = values.output
  if (format !== undefined && format !== 'json' && format !== 'yaml') {
    throw usageError(`--output must be json or yaml, not "${format}"`)
  }
  const client = clientVersion()
  // The client's line comes first, so it is there even when the server cannot be reached.
  if (format === undefined) io.stdout.write(`Client Version: ${client}\n`)
  let server: string | undefined
  let failed = false
  if (values.client !== true) {
    const result = await new ApiClient(connectionFrom(values, io), io.signal).getPath('/openapi.json')
    if (result.ok) {
      const version = field(result.body, 'info', 'version')
      server = typeof version === 'string' ? version : 'unknown'
    } else {
      io.stderr.write(`${serverErrorLine(result.status)}\n`)
      failed = true
    }
  }
  if (format === undefined) {
    if (server !== undefined) io.stdout.write(`Server Version: ${server}\n`)
  } else {
    const document = { clientVersion: client, ...(server === undefined ? {} : { serverVersion: server }) }
    io.stdout.write(format === 'json' ? toJson(document) : toYaml(document))
  }
  return failed ? 1 : 0
}
