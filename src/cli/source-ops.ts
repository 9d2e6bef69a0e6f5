import { KafkaSourceKind } from '../api/index.ts'
import type { KindInfo } from '../api/index.ts'
import { ApiClient } from './api-client.ts'
import type { ApiResult } from './api-client.ts'
import { serverErrorLine } from './api-status.ts'
import { connectionFlags, connectionFrom, namespaceFrom, parseFlags, usageError } from './flags.ts'
import { usage } from './help.ts'
import type { CliIo } from './io.ts'
import { toJson, toYaml } from './output.ts'
import { resolveKind } from './resource-args.ts'
import { qualifiedKind } from './resources.ts'
import type { JsonObject } from './resources.ts'
import { renderTable } from './table.ts'

/** The annotation a pause sets (the controller reads it: src/api/paused.ts). */
const PAUSED = 'shoal.dev/paused'

const pauseFlags = { ...connectionFlags, namespace: { type: 'string', short: 'n' } } as const

/**
 * `shoal pause|resume <kind> NAME`: sets or removes the source's `shoal.dev/paused` annotation (compare-and-set,
 * retried on a conflict). A paused source gets no vreplicas: its members drain, commit and leave, so nothing is
 * delivered and its position is kept in its committed offsets; its autoscaler holds.
 */
export async function runPause(args: readonly string[], io: CliIo, paused: boolean): Promise<number> {
  const verb = paused ? 'pause' : 'resume'
  const { values, positionals } = parseFlags(args, pauseFlags)
  if (values.help === true) {
    io.stdout.write(paused ? usage.pause : usage.resume)
    return 0
  }
  const { info, name } = kindAndName(positionals, verb)
  const namespace = namespaceFrom(values.namespace)
  const api = new ApiClient(connectionFrom(values, io), io.signal)
  let unchanged = false
  for (let attempt = 0; ; attempt++) {
    const current = await api.get(info, namespace, name)
    if (!current.ok) return fail(current, io)
    const object = current.body as JsonObject & { metadata: JsonObject & { annotations?: Record<string, string> } }
    const annotations = { ...(object.metadata.annotations ?? {}) }
    if ((annotations[PAUSED] === 'true') === paused) {
      unchanged = true
      break
    }
    if (paused) annotations[PAUSED] = 'true'
    else delete annotations[PAUSED]
    const { status: _status, ...desired } = object
    const replaced = await api.replace(info, namespace, name, {
      ...desired,
      metadata: { ...object.metadata, annotations }
    })
    if (replaced.ok) break
    if (replaced.status.reason !== 'Conflict' || attempt >= 4) return fail(replaced, io)
  }
  const word = paused ? 'paused' : 'resumed'
  io.stdout.write(`${qualifiedKind(info)}/${name} ${unchanged ? `already ${word}` : word}\n`)
  return 0
}

const offsetsFlags = {
  ...connectionFlags,
  namespace: { type: 'string', short: 'n' },
  reset: { type: 'string' },
  output: { type: 'string', short: 'o' }
} as const

interface OffsetsAnswer {
  readonly groupId: string
  readonly paused: boolean
  readonly totalLag: number
  readonly partitions: ReadonlyArray<{
    topic: string
    partition: number
    committed: string | null
    lastStable: string
    lag: string
  }>
}

/**
 * `shoal offsets kafkasource NAME [--reset earliest|latest|TIME]`: the consumer group's committed offset, the last
 * stable offset and the lag per partition; with --reset, moves the committed offsets (the source must be paused).
 */
export async function runOffsets(args: readonly string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseFlags(args, offsetsFlags)
  if (values.help === true) {
    io.stdout.write(usage.offsets)
    return 0
  }
  const { info, name } = kindAndName(positionals, 'offsets')
  if (info.kind !== KafkaSourceKind.kind) throw usageError(`only kafkasources have offsets, not ${info.plural}`)
  const output = values.output
  if (output !== undefined && output !== 'json' && output !== 'yaml')
    throw usageError(`-o ${output}: offsets print as a table, json or yaml`)
  const namespace = namespaceFrom(values.namespace)
  const api = new ApiClient(connectionFrom(values, io), io.signal)
  const path = `/shoal/v1/namespaces/${encodeURIComponent(namespace)}/kafkasources/${encodeURIComponent(name)}/offsets`
  const answer =
    values.reset === undefined ? await api.getPath(path) : await api.postPath(path, { reset: values.reset })
  if (!answer.ok) return fail(answer, io)
  const view = answer.body as OffsetsAnswer
  if (output === 'json' || output === 'yaml') {
    io.stdout.write(output === 'json' ? toJson(view) : toYaml(view))
    return 0
  }
  if (values.reset !== undefined) io.stdout.write(`${qualifiedKind(info)}/${name} offsets reset to ${values.reset}\n`)
  io.stdout.write(
    renderTable(
      ['TOPIC', 'PARTITION', 'COMMITTED', 'LAST-STABLE', 'LAG'],
      view.partitions.map(p => [p.topic, String(p.partition), p.committed ?? '-', p.lastStable, p.lag])
    )
  )
  io.stdout.write(`Group ${view.groupId}: total lag ${view.totalLag}${view.paused ? ' (paused)' : ''}\n`)
  return 0
}

function kindAndName(positionals: readonly string[], verb: string): { info: KindInfo; name: string } {
  const [type, name, ...extra] =
    positionals.length === 1 && positionals[0]!.includes('/') ? positionals[0]!.split('/') : positionals
  if (type === undefined || name === undefined || name === '' || extra.length > 0)
    throw usageError(`usage: shoal ${verb} <kind> NAME (e.g. shoal ${verb} kafkasource my-source)`)
  const info = resolveKind(type, false)
  if (!info.namespaced) throw usageError(`${info.plural} cannot be ${verb === 'offsets' ? 'read' : `${verb}d`}`)
  return { info, name }
}

function fail(result: Extract<ApiResult, { ok: false }>, io: CliIo): number {
  io.stderr.write(`${serverErrorLine(result.status)}\n`)
  return 1
}
