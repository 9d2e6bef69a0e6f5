import type { KindInfo } from '../api/index.ts'
import { ApiClient } from './api-client.ts'
import { serverErrorLine } from './api-status.ts'
import { connectionFlags, connectionFrom, namespaceFrom, parseFlags, usageError } from './flags.ts'
import { usage } from './help.ts'
import type { CliIo } from './io.ts'
import { manifestTarget } from './manifest-target.ts'
import { readManifests } from './manifests.ts'
import { parseResourceArgs } from './resource-args.ts'
import { qualifiedKind } from './resources.ts'

const flags = {
  ...connectionFlags,
  filename: { type: 'string', short: 'f', multiple: true },
  namespace: { type: 'string', short: 'n' },
  'ignore-not-found': { type: 'boolean' }
} as const

interface Target {
  readonly kind: KindInfo
  readonly namespace: string
  readonly name: string
}

/** `shoal delete` */
export async function runDelete(args: readonly string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseFlags(args, flags)
  if (values.help === true) {
    io.stdout.write(usage.delete)
    return 0
  }
  const files = values.filename ?? []
  if (files.length > 0 && positionals.length > 0) {
    throw usageError('resource arguments cannot be combined with -f; name the resources one way or the other')
  }
  if (files.length === 0 && positionals.length === 0) {
    throw usageError('-f or a resource type and name is required (e.g. shoal delete kafkasource my-source)')
  }
  const namespace = namespaceFrom(values.namespace)
  const connection = connectionFrom(values, io)

  let failed = false
  const targets: Target[] = []
  if (files.length > 0) {
    const read = await readManifests(files, io.readStdin)
    for (const error of read.errors) io.stderr.write(`error: ${error}\n`)
    failed = read.errors.length > 0
    const defaultNamespace = { value: namespace, explicit: values.namespace !== undefined }
    for (const { source, value } of read.objects) {
      const target = manifestTarget(value, source, defaultNamespace)
      if (!target.ok) {
        io.stderr.write(`error: ${target.message}\n`)
        failed = true
      } else if (target.name === undefined || target.name === '') {
        io.stderr.write(`error: a ${target.kind.kind} in ${source} has no metadata.name\n`)
        failed = true
      } else {
        targets.push({ kind: target.kind, namespace: target.namespace, name: target.name })
      }
    }
  } else {
    for (const { kind, names } of parseResourceArgs(positionals, 'delete')) {
      if (names.length === 0) {
        throw usageError(
          `resource(s) were provided, but no name was specified (e.g. shoal delete ${kind.singular} NAME)`
        )
      }
      targets.push(...names.map(name => ({ kind, namespace, name })))
    }
  }

  const client = new ApiClient(connection, io.signal)
  for (const { kind, namespace: ns, name } of targets) {
    const result = await client.delete(kind, ns, name)
    if (result.ok) {
      io.stdout.write(`${qualifiedKind(kind)} "${name}" deleted\n`)
    } else if (!(result.status.reason === 'NotFound' && values['ignore-not-found'] === true)) {
      io.stderr.write(`${serverErrorLine(result.status)}\n`)
      failed = true
    }
  }
  return failed ? 1 : 0
}
