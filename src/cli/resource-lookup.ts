// What `shoal get` and `shoal describe` share: reading which resources are asked for (kinds, names, -n, -A,
// -l) and fetching them; each command then shows what came back its own way.

import { matchesSelector, parseSelector, serverSelector } from '../api/index.ts'
import type { KindInfo, Requirement } from '../api/index.ts'
import type { ApiClient } from './api-client.ts'
import { serverErrorLine } from './api-status.ts'
import { namespaceFrom, usageError } from './flags.ts'
import type { CliIo } from './io.ts'
import { itemsOf, withTypeMeta } from './output.ts'
import { parseResourceArgs } from './resource-args.ts'
import type { ResourceRequest } from './resource-args.ts'
import { byNamespaceAndName, stringMap } from './resources.ts'

/** The flags that say which resources to look up, beside the resource arguments. */
export const lookupFlags = {
  namespace: { type: 'string', short: 'n' },
  'all-namespaces': { type: 'boolean', short: 'A' },
  selector: { type: 'string', short: 'l' }
} as const

/** Where a listing looks: one namespace, or all of them. */
export interface Scope {
  readonly namespace: string
  readonly allNamespaces: boolean
}

/** The resources a command is asked for, checked. */
export interface Lookup {
  readonly requests: readonly ResourceRequest[]
  readonly scope: Scope
  readonly selector: readonly Requirement[] | undefined
  /** Some resource was named: then neither -A nor -l may be given. */
  readonly named: boolean
}

/** One kind asked for and the objects fetched of it, each with its apiVersion and kind. */
export interface Found {
  readonly kind: KindInfo
  objects: unknown[]
}

/** The selector given with -l, checked; a usage error names what is wrong in it. */
export function selectorFrom(raw: string | undefined): readonly Requirement[] | undefined {
  if (raw === undefined) return undefined
  const parsed = parseSelector(raw)
  if (!parsed.ok) throw usageError(parsed.message)
  return parsed.requirements
}

/** Reads the resource arguments and the lookup flags; a usage error for a combination that cannot be served. */
export function lookupFrom(
  positionals: readonly string[],
  values: { readonly namespace?: string; readonly 'all-namespaces'?: boolean; readonly selector?: string },
  verb: string
): Lookup {
  const requests = parseResourceArgs(positionals, verb)
  const scope: Scope = { namespace: namespaceFrom(values.namespace), allNamespaces: values['all-namespaces'] === true }
  const selector = selectorFrom(values.selector)
  const named = requests.some(r => r.names.length > 0)
  if (named && scope.allNamespaces) throw usageError('a resource cannot be retrieved by name across all namespaces')
  if (named && selector !== undefined) throw usageError('a selector (-l) cannot be combined with resource names')
  return { requests, scope, selector, named }
}

/**
 * Fetches what the lookup asks for, in the order asked: a kind without names is listed (filtered by the
 * selector, sorted by namespace and name), a named one fetched name by name. Each server error is written to
 * stderr and makes `failed` true; a kind whose listing failed is left out of `found`.
 */
export async function fetchLookup(
  client: ApiClient,
  lookup: Lookup,
  io: CliIo
): Promise<{ readonly found: Found[]; readonly failed: boolean }> {
  const { scope, selector } = lookup
  let failed = false
  const found: Found[] = []
  for (const { kind, names } of lookup.requests) {
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
  return { found, failed }
}

/** What a listing that found nothing says. */
export function noResourcesFound(scope: Scope): string {
  return scope.allNamespaces ? 'No resources found' : `No resources found in ${scope.namespace} namespace.`
}
