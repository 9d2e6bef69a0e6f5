import { createHash } from 'node:crypto'
import { checkDns1123Subdomain } from './names.ts'

/**
 * OIDC to sinks, as Shoal carries it. Knative's `audience` (on `spec.sink` and `spec.delivery.deadLetterSink`) is a
 * Kubernetes feature: a token for that audience, of the source's own service account, from the TokenRequest API.
 * Only the operator (`shoal controller --kubernetes`) can get one, so Shoal's own API refuses `audience`; the operator
 * moves it into this annotation and keeps the tokens in a Shoal Secret named after the service account, one key per
 * audience. A dispatcher reads the token from there (docs/kubernetes.md, "OIDC to sinks").
 */
export const OIDC_ANNOTATION = 'sources.shoal.dev/oidc'

/** Which service account's tokens a source presents, and to which of its destinations. */
export interface OidcAudiences {
  /** The source's OIDC service account; its Shoal Secret of the same name holds the tokens. */
  readonly serviceAccountName: string
  readonly sink?: string
  readonly deadLetterSink?: string
}

export type OidcAnnotationParse =
  | { readonly kind: 'none' }
  | { readonly kind: 'oidc'; readonly oidc: OidcAudiences }
  | { readonly kind: 'invalid'; readonly message: string }

/** What the annotation says, if the source has it. */
export function parseOidcAnnotation(annotations: Readonly<Record<string, unknown>> | undefined): OidcAnnotationParse {
  const text = annotations?.[OIDC_ANNOTATION]
  if (text === undefined) return { kind: 'none' }
  const invalid = (message: string): OidcAnnotationParse => ({ kind: 'invalid', message })
  if (typeof text !== 'string') return invalid('must be a string')
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return invalid('must be JSON: {"serviceAccountName": "...", "sink": "audience", "deadLetterSink": "audience"}')
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return invalid('must be a JSON object')
  const { serviceAccountName, sink, deadLetterSink, ...rest } = value as Record<string, unknown>
  const unknown = Object.keys(rest)
  if (unknown.length > 0) return invalid(`unknown field ${JSON.stringify(unknown[0])}`)
  if (typeof serviceAccountName !== 'string') return invalid('serviceAccountName must be a string')
  const nameProblem = checkDns1123Subdomain(serviceAccountName)
  if (nameProblem !== undefined) return invalid(`serviceAccountName ${nameProblem}`)
  for (const [field, audience] of [
    ['sink', sink],
    ['deadLetterSink', deadLetterSink]
  ] as const) {
    if (audience !== undefined && (typeof audience !== 'string' || audience === '')) {
      return invalid(`${field} must be a non-empty string (an audience)`)
    }
  }
  if (sink === undefined && deadLetterSink === undefined) return invalid('names no audience (sink, deadLetterSink)')
  return {
    kind: 'oidc',
    oidc: {
      serviceAccountName,
      ...(sink === undefined ? {} : { sink: sink as string }),
      ...(deadLetterSink === undefined ? {} : { deadLetterSink: deadLetterSink as string })
    }
  }
}

/** The annotation's value for `oidc`. */
export function formatOidcAnnotation(oidc: OidcAudiences): string {
  return JSON.stringify(oidc)
}

/** The key under which a Secret holds the token for `audience` (a Secret's keys cannot hold a URL's characters). */
export function oidcTokenKey(audience: string): string {
  return `aud-${createHash('sha256').update(audience).digest('hex').slice(0, 32)}`
}
