import { ApiClient } from './api-client.ts'
import { serverErrorLine } from './api-status.ts'
import { renderDescribe } from './describe-format.ts'
import { connectionFlags, connectionFrom, namespaceFrom, parseFlags, usageError } from './flags.ts'
import { noResourcesFound, selectorFrom } from './get.ts'
import type { Scope } from './get.ts'
import { usage } from './help.ts'
import type { CliIo } from './io.ts'
import { itemsOf, withTypeMeta } from './output.ts'
import { parseResourceArgs } from './resource-args.ts'
import { byNamespaceAndName, stringMap } from './resources.ts'
import { matchesSelector, serverSelector } from '../api/index.ts'

const flags = {
  ...connectionFlags,
  namespace: { type: 'string', short: 'n' },
  'all-namespaces': { type: 'boolean', short: 'A' },
  selector: { type: 'string', short: 'l' }
} as const

/** `shoal describe` */
export async function runDescribe(args: readonly string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseFlags(args, flags)
  if (values.help === true) {
    io.stdout.write(usage.describe)
    return 0
  }
  const requests = parseResourceArgs(positionals, 'describe')
  const scope: Scope = { namespace: namespaceFrom(values.namespace), allNamespaces: values['all-namespaces'] === true }
  const selector = selectorFrom(values.selector)
  const named = requests.some(r => r.names.length > 0)
  if (named && scope.allNamespaces) throw usageError('a resource cannot be retrieved by name across all namespaces')
  if (named && selector !== undefined) throw usageError('a selector (-l) cannot be combined with resource names')
  const client = new ApiClient(connectionFrom(values, io), io.signal)

  let failed = false
  const described: string[] = []
  for (const { kind, names } of requests) {
    if (names.length === 0) {
      const namespace = scope.allNamespaces ? undefined : scope.namespace
      const result = await client.list(kind, namespace, selector === undefined ? undefined : serverSelector(selector))
      if (!result.ok) {
        io.stderr.write(`${serverErrorLine(result.status)}\n`)
        failed = true
        continue
      }
      const items = itemsOf(result.body)
        .filter(o => selector === undefined || matchesSelector(selector, stringMap(o, 'labels')))
        .sort(byNamespaceAndName)
      described.push(...items.map(o => renderDescribe(withTypeMeta(kind, o))))
      continue
    }
    for (const name of names) {
      const result = await client.get(kind, scope.namespace, name)
      if (result.ok) {
        described.push(renderDescribe(withTypeMeta(kind, result.body)))
      } else {
        io.stderr.write(`${serverErrorLine(result.status)}\n`)
        failed = true
      }
    }
  }
  if (described.length === 0 && !named && !failed) io.stderr.write(`${noResourcesFound(scope)}\n`)
  io.stdout.write(described.join('\n\n'))
  return failed ? 1 : 0
}
