import { DispatcherKind, KafkaSourceKind, apiVersionOf } from '../api/index.ts'
import { ApiClient } from './api-client.ts'
import type { ApiResult } from './api-client.ts'
import { serverErrorLine } from './api-status.ts'
import { connectionFlags, connectionFrom, namespaceFrom, parseFlags, usageError } from './flags.ts'
import { usage } from './help.ts'
import type { CliIo } from './io.ts'
import { resolveKind } from './resource-args.ts'
import { qualifiedKind } from './resources.ts'
import type { JsonObject } from './resources.ts'

/** `shoal cordon NAME…` / `shoal uncordon NAME…`: set a Dispatcher's spec.unschedulable, kept in the store. */
export async function runCordon(args: readonly string[], io: CliIo, unschedulable: boolean): Promise<number> {
  const { values, positionals } = parseFlags(args, connectionFlags)
  if (values.help === true) {
    io.stdout.write(unschedulable ? usage.cordon : usage.uncordon)
    return 0
  }
  if (positionals.length === 0) throw usageError('a dispatcher name is required (e.g. dispatcher-3)')
  const api = new ApiClient(connectionFrom(values, io))
  const verb = unschedulable ? 'cordoned' : 'uncordoned'
  let failed = false
  for (const name of positionals) {
    const outcome = await withConflictRetry(async () => {
      const current = await api.get(DispatcherKind, '', name)
      const stored = current.ok ? resourceVersionOf(current.body) : undefined
      if (
        current.ok &&
        (current.body as { spec?: { unschedulable?: boolean } }).spec?.unschedulable === unschedulable &&
        stored
      ) {
        return 'unchanged' as const
      }
      const body = {
        apiVersion: apiVersionOf(DispatcherKind),
        kind: DispatcherKind.kind,
        metadata: { name, ...(stored ? { resourceVersion: stored } : {}) },
        spec: { unschedulable }
      }
      return stored ? api.replace(DispatcherKind, '', name, body) : api.create(DispatcherKind, '', body)
    })
    if (outcome === 'unchanged') io.stdout.write(`dispatcher/${name} already ${verb}\n`)
    else if (outcome.ok) io.stdout.write(`dispatcher/${name} ${verb}\n`)
    else {
      io.stderr.write(`${serverErrorLine(outcome.status)}\n`)
      failed = true
    }
  }
  return failed ? 1 : 0
}

const scaleFlags = {
  ...connectionFlags,
  namespace: { type: 'string', short: 'n' },
  consumers: { type: 'string' },
  replicas: { type: 'string' }
} as const

/** `shoal scale kafkasource NAME --consumers N`: change a source's vreplicas (compare-and-set, retried). */
export async function runScale(args: readonly string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseFlags(args, scaleFlags)
  if (values.help === true) {
    io.stdout.write(usage.scale)
    return 0
  }
  const [type, name, ...extra] =
    positionals.length === 1 && positionals[0]!.includes('/') ? positionals[0]!.split('/') : positionals
  if (type === undefined || name === undefined || extra.length > 0)
    throw usageError('usage: shoal scale kafkasource NAME --consumers N')
  const info = resolveKind(type, false)
  if (info.kind !== KafkaSourceKind.kind) throw usageError(`only kafkasources scale; a ${info.kind} has one vreplica`)
  const raw = values.consumers ?? values.replicas
  if (raw === undefined) throw usageError('--consumers N is required')
  const consumers = Number(raw)
  if (!Number.isInteger(consumers) || consumers < 0)
    throw usageError(`--consumers must be a whole number >= 0, not "${raw}"`)
  const namespace = namespaceFrom(values.namespace)
  const api = new ApiClient(connectionFrom(values, io))
  const outcome = await withConflictRetry(async () => {
    const current = await api.get(info, namespace, name)
    if (!current.ok) return current
    const object = current.body as JsonObject & { spec: JsonObject }
    return api.replace(info, namespace, name, { ...object, spec: { ...object.spec, consumers } })
  })
  if (outcome === 'unchanged' || outcome.ok) {
    io.stdout.write(`${qualifiedKind(info)}/${name} scaled\n`)
    return 0
  }
  io.stderr.write(`${serverErrorLine(outcome.status)}\n`)
  return 1
}

interface Proposal {
  readonly revision: number
  readonly scoreBefore: number
  readonly scoreAfter: number
  readonly moves: ReadonlyArray<{ source: string; from: string; to: string; vreplicas: number }>
}

const rebalanceFlags = { ...connectionFlags, approve: { type: 'boolean' }, revision: { type: 'string' } } as const

/** `shoal rebalance [--approve [--revision R]]`: show, and on approval apply, the scheduler's proposal. */
export async function runRebalance(args: readonly string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseFlags(args, rebalanceFlags)
  if (values.help === true) {
    io.stdout.write(usage.rebalance)
    return 0
  }
  if (positionals.length > 0) throw usageError(`unexpected argument "${positionals[0]}"`)
  const api = new ApiClient(connectionFrom(values, io))
  const proposed = await api.getPath(REBALANCE_PATH)
  if (!proposed.ok) {
    io.stderr.write(`${serverErrorLine(proposed.status)}\n`)
    return 1
  }
  const proposal = proposed.body as Proposal
  const revision = values.revision === undefined ? proposal.revision : Number(values.revision)
  if (!Number.isInteger(revision)) throw usageError(`--revision must be a number, not "${values.revision}"`)
  io.stdout.write(formatProposal(proposal))
  if (values.approve !== true) {
    if (proposal.moves.length > 0)
      io.stdout.write(`\nApply it with: shoal rebalance --approve --revision ${proposal.revision}\n`)
    return 0
  }
  const applied = await api.postPath(REBALANCE_PATH, { revision })
  if (!applied.ok) {
    io.stderr.write(`${serverErrorLine(applied.status)}\n`)
    return 1
  }
  const result = applied.body as { moved: number; revision: number; score: number }
  io.stdout.write(
    `\napplied: ${result.moved} move(s); balancedness now ${result.score.toFixed(1)}; revision ${result.revision}\n`
  )
  return 0
}

const REBALANCE_PATH = '/shoal/v1/rebalance'

function formatProposal(p: Proposal): string {
  const lines = [
    `Revision:      ${p.revision}`,
    `Balancedness:  ${p.scoreBefore.toFixed(1)} -> ${p.scoreAfter.toFixed(1)} (0-100, higher is better)`,
    `Moves:         ${p.moves.length === 0 ? 'none' : p.moves.length}`
  ]
  for (const m of p.moves) lines.push(`  ${m.source}: ${m.vreplicas} vreplica(s) ${m.from} -> ${m.to}`)
  return `${lines.join('\n')}\n`
}

/** Runs a read-modify-write until it does not meet a Conflict (someone else wrote in between), at most 5 times. */
async function withConflictRetry(attempt: () => Promise<ApiResult | 'unchanged'>): Promise<ApiResult | 'unchanged'> {
  for (let i = 0; ; i++) {
    const outcome = await attempt()
    if (outcome === 'unchanged' || outcome.ok || outcome.status.reason !== 'Conflict' || i >= 4) return outcome
  }
}

function resourceVersionOf(body: unknown): string | undefined {
  const rv = (body as { metadata?: { resourceVersion?: unknown } }).metadata?.resourceVersion
  return typeof rv === 'string' && rv !== '' ? rv : undefined
}
