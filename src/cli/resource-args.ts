import { kinds, lookupKind, sourceKinds } from '../api/index.ts'
import type { KindInfo } from '../api/index.ts'
import { usageError } from './flags.ts'

/** One kind a command works on, and the names given for it (none = all of them). */
export interface ResourceRequest {
  readonly kind: KindInfo
  readonly names: readonly string[]
}

/**
 * Reads kubectl's resource arguments: `TYPE[,TYPE…] [NAME…]` or `TYPE/NAME [TYPE/NAME…]`, where TYPE is a
 * plural, singular, kind or short name, and `all` means every kind. Kinds come back once each, in the order
 * first named.
 */
export function parseResourceArgs(args: readonly string[], verb: string): ResourceRequest[] {
  const [first, ...rest] = args
  if (first === undefined) {
    throw usageError(`you must specify the type of resource to ${verb} (one of: ${typeNames()})`)
  }
  if (first.includes('/')) {
    const byKind = new Map<KindInfo, string[]>()
    for (const arg of args) {
      const slash = arg.indexOf('/')
      if (slash === -1) {
        throw usageError(
          `there is no need to specify a resource type as a separate argument when passing arguments in resource/name form (e.g. 'shoal ${verb} kafkasource/my-source' instead of 'shoal ${verb} kafkasource my-source')`
        )
      }
      const kind = resolveKind(arg.slice(0, slash), false)
      const name = arg.slice(slash + 1)
      if (name === '')
        throw usageError(`arguments in resource/name form must have a single resource and name: "${arg}"`)
      byKind.set(kind, [...(byKind.get(kind) ?? []), name])
    }
    return [...byKind].map(([kind, names]) => ({ kind, names }))
  }
  const requested: KindInfo[] = []
  for (const type of first.split(',')) {
    for (const kind of type === 'all' ? sourceKinds : [resolveKind(type, true)]) {
      if (!requested.includes(kind)) requested.push(kind)
    }
  }
  const names = rest.filter(n => n !== '')
  return requested.map(kind => ({ kind, names }))
}

export function resolveKind(type: string, allowAll: boolean): KindInfo {
  const kind = lookupKind(type)
  if (kind !== undefined) return kind
  if (type === 'all' && !allowAll) throw usageError(`"all" cannot be used in resource/name form`)
  throw usageError(`unknown resource type "${type}" (one of: ${typeNames()})`)
}

/** The names a user can type: `kafkasources (ks), pingsources (ps)`. */
export function typeNames(): string {
  return kinds.map(k => (k.shortNames.length === 0 ? k.plural : `${k.plural} (${k.shortNames.join(', ')})`)).join(', ')
}
