import { checkAbsoluteHttpUrl, serviceApiVersions } from './semantic-checks.ts'
import type { Destination } from './types.ts'

/** Where a Service ref points by default: Kubernetes cluster DNS, as Knative resolves it. */
export const DEFAULT_SERVICE_URL_TEMPLATE = 'http://{name}.{namespace}.svc.cluster.local'

export interface ResolveOptions {
  /** A URL with `{name}` and `{namespace}` placeholders, filled from the Service ref. */
  readonly serviceUrlTemplate: string
}

/** Why a destination did not resolve; `reason` is a condition reason (CamelCase). */
export type DestinationResolution =
  | { readonly kind: 'resolved'; readonly uri: string }
  | { readonly kind: 'unresolved'; readonly reason: string; readonly message: string }

/**
 * The URI a destination points at: its absolute `uri`, or its Service ref filled into the template, plus
 * the relative `uri` (resolved as a relative reference, RFC 3986) when the ref has one.
 */
export function resolveDestination(
  dest: Destination,
  defaultNamespace: string,
  options: ResolveOptions
): DestinationResolution {
  const { ref, uri } = dest
  if (ref === undefined) {
    if (uri === undefined) return unresolved('SinkMissing', 'the destination has neither ref nor uri')
    const problem = checkAbsoluteHttpUrl(uri)
    return problem === undefined ? { kind: 'resolved', uri } : unresolved('InvalidURI', `uri ${uri}: ${problem}`)
  }
  if (ref.kind !== 'Service' || !serviceApiVersions.includes(ref.apiVersion)) {
    return unresolved('UnsupportedRef', `cannot resolve ${ref.kind} (${ref.apiVersion}): only Service refs resolve`)
  }
  const namespace = ref.namespace ?? defaultNamespace
  const base = fillTemplate(options.serviceUrlTemplate, ref.name, namespace)
  const baseProblem = checkAbsoluteHttpUrl(base)
  if (baseProblem !== undefined) {
    return unresolved('InvalidServiceUrlTemplate', `service URL template gives ${base}: ${baseProblem}`)
  }
  if (uri === undefined) return { kind: 'resolved', uri: base }
  if (!URL.canParse(uri, base)) return unresolved('InvalidURI', `uri ${uri} is not a valid relative URI`)
  return { kind: 'resolved', uri: new URL(uri, base).href }
}

/** What is wrong with a service URL template, or undefined: check it once, when configuration is read. */
export function checkServiceUrlTemplate(template: string): string | undefined {
  if (!template.includes('{name}')) return 'must contain {name}'
  const problem = checkAbsoluteHttpUrl(fillTemplate(template, 'name', 'namespace'))
  return problem === undefined ? undefined : `${template}: ${problem}`
}

function fillTemplate(template: string, name: string, namespace: string): string {
  return template.replaceAll('{name}', name).replaceAll('{namespace}', namespace)
}

function unresolved(reason: string, message: string): DestinationResolution {
  return { kind: 'unresolved', reason, message }
}
