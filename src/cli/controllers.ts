import { parseArgs } from 'node:util'
import { ApiClient } from './api-client.ts'
import { serverErrorLine } from './api-status.ts'
import { connectionFlags, connectionFrom, parseFlags, usageError } from './flags.ts'
import { usage } from './help.ts'
import type { CliIo } from './io.ts'
import { toJson, toYaml } from './output.ts'
import { renderTable } from './table.ts'

/** The names `shoal get` takes for the control-plane replicas (not a stored kind: they come from the group). */
const CONTROLLER_TYPES = new Set(['controllers', 'controller', 'ctrl'])

/** True for `shoal get controllers …`, wherever its flags stand (`-s URL get controllers` too). */
export function isControllersGet(args: readonly string[]): boolean {
  // Not strict: an unknown flag is refused by the command that runs, with its name.
  const { positionals } = parseArgs({ args: [...args], options: flags, allowPositionals: true, strict: false })
  const first = positionals[0]
  return first !== undefined && CONTROLLER_TYPES.has(first.toLowerCase())
}

interface ReplicaView {
  readonly replicaId: string
  readonly url: string
  readonly generation: number
  readonly buckets: readonly number[]
  readonly since: string
  readonly leader: boolean
}

interface ControllersView {
  readonly self: { readonly replicaId: string }
  readonly buckets: number
  readonly replicas: readonly ReplicaView[]
}

const flags = { ...connectionFlags, output: { type: 'string', short: 'o' } } as const

/**
 * `shoal get controllers`: each control-plane replica of the current group generation, its buckets, and the
 * leader (the owner of bucket 0, which runs the scheduler and the autoscalers). Replicas that announced an older
 * generation and were not heard of since (a SIGKILLed one) are left out; `-o json` shows them all.
 */
export async function runGetControllers(args: readonly string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseFlags(args, flags)
  if (values.help === true) {
    io.stdout.write(usage.get)
    return 0
  }
  if (positionals.length > 1) throw usageError('controllers are listed all together: shoal get controllers')
  const output = values.output
  if (output !== undefined && !['json', 'yaml', 'wide'].includes(output))
    throw usageError(`-o ${output}: controllers print as a table, wide, json or yaml`)
  const api = new ApiClient(connectionFrom(values, io), io.signal)
  const answer = await api.getPath('/internal/v1/controllers')
  if (!answer.ok) {
    io.stderr.write(`${serverErrorLine(answer.status)}\n`)
    return 1
  }
  const view = answer.body as ControllersView
  if (output === 'json' || output === 'yaml') {
    io.stdout.write(output === 'json' ? toJson(view) : toYaml(view))
    return 0
  }
  const current = currentReplicas(view.replicas)
  const headers = ['NAME', 'BUCKETS', 'LEADER', 'GENERATION', 'URL', ...(output === 'wide' ? ['SINCE'] : [])]
  const rows = current.map(r => [
    r.replicaId,
    `${bucketRanges(r.buckets)} (${r.buckets.length}/${view.buckets})`,
    r.leader ? 'yes' : '',
    String(r.generation),
    r.url,
    ...(output === 'wide' ? [r.since] : [])
  ])
  io.stdout.write(renderTable(headers, rows))
  if (!current.some(r => r.leader)) io.stderr.write('no leader right now (the controllers group is rebalancing)\n')
  return 0
}

/** The replicas of the newest generation, sorted by name. */
export function currentReplicas(replicas: readonly ReplicaView[]): ReplicaView[] {
  const newest = Math.max(-1, ...replicas.map(r => r.generation))
  return replicas.filter(r => r.generation === newest).sort((a, b) => a.replicaId.localeCompare(b.replicaId))
}

/** `[0,1,2,5,7,8]` → `0-2,5,7-8`; none → `<none>`. */
export function bucketRanges(buckets: readonly number[]): string {
  if (buckets.length === 0) return '<none>'
  const sorted = [...buckets].sort((a, b) => a - b)
  const parts: string[] = []
  let start = sorted[0]!
  let end = start
  for (const b of sorted.slice(1)) {
    if (b === end + 1) end = b
    else {
      parts.push(start === end ? String(start) : `${start}-${end}`)
      start = end = b
    }
  }
  parts.push(start === end ? String(start) : `${start}-${end}`)
  return parts.join(',')
}
