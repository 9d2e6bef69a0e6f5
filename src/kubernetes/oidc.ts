// OIDC to sinks, decided without I/O (docs/kubernetes.md, "OIDC to sinks"): the service account Knative names for a
// source, the audiences its spec asks tokens for, the manifest Shoal gets (audiences moved into Shoal's annotation)
// and the status fields Knative writes for it.
import { createHash } from 'node:crypto'
import { OIDC_ANNOTATION, formatOidcAnnotation } from '../api/index.ts'
import type { KindInfo, OidcAudiences } from '../api/index.ts'
import type { KubeCondition, ShoalManifest } from './mirror.ts'

/** The longest name Kubernetes gives an object of a DNS-label kind, as Knative's child names keep to. */
const LONGEST = 63
const MD5_HEX = 32

/**
 * The name of a source's OIDC service account as Knative names it (`<name>-oidc-<group>-<kind>`, lower case): a
 * name too long for 63 characters keeps its first 31 and the MD5 of the whole, then as much of the suffix as fits.
 * (Knative cuts differently for suffixes under 31 characters; `-oidc-sources.knative.dev-<kind>` never is.)
 */
export function oidcServiceAccountName(info: Pick<KindInfo, 'group' | 'kind'>, sourceName: string): string {
  const suffix = `-oidc-${info.group}-${info.kind}`
  const whole = `${sourceName}${suffix}`
  if (whole.length <= LONGEST) return whole.toLowerCase()
  let name = `${sourceName.slice(0, LONGEST - MD5_HEX)}${md5(whole)}`
  if (name.length < LONGEST) name += suffix.slice(0, LONGEST - name.length)
  return name.replace(/-+$/, '').toLowerCase()
}

function md5(text: string): string {
  return createHash('md5').update(text).digest('hex')
}

interface WithAudience {
  readonly audience?: unknown
}

/** The audiences a spec's destinations name (after their refs resolved: an Addressable may give one). */
export function specAudiences(spec: unknown): Omit<OidcAudiences, 'serviceAccountName'> {
  const source = (spec ?? {}) as { sink?: WithAudience; delivery?: { deadLetterSink?: WithAudience } }
  const sink = source.sink?.audience
  const deadLetterSink = source.delivery?.deadLetterSink?.audience
  return {
    ...(typeof sink === 'string' && sink !== '' ? { sink } : {}),
    ...(typeof deadLetterSink === 'string' && deadLetterSink !== '' ? { deadLetterSink } : {})
  }
}

/** The OIDC a source needs: its service account and audiences, or undefined when it names no audience. */
export function oidcOf(info: KindInfo, sourceName: string, spec: unknown): OidcAudiences | undefined {
  const audiences = specAudiences(spec)
  if (audiences.sink === undefined && audiences.deadLetterSink === undefined) return undefined
  return { serviceAccountName: oidcServiceAccountName(info, sourceName), ...audiences }
}

/** Shoal's manifest with the audiences moved out of the destinations into Shoal's OIDC annotation. */
export function withOidcAnnotation(manifest: ShoalManifest, oidc: OidcAudiences | undefined): ShoalManifest {
  if (oidc === undefined) return manifest
  const spec = { ...(manifest.spec as Record<string, unknown>) }
  const sink = spec['sink'] as Record<string, unknown> | undefined
  if (sink !== undefined) spec['sink'] = withoutAudience(sink)
  const delivery = spec['delivery'] as Record<string, unknown> | undefined
  const deadLetterSink = delivery?.['deadLetterSink'] as Record<string, unknown> | undefined
  if (deadLetterSink !== undefined) spec['delivery'] = { ...delivery, deadLetterSink: withoutAudience(deadLetterSink) }
  return {
    ...manifest,
    metadata: {
      ...manifest.metadata,
      annotations: { ...manifest.metadata.annotations, [OIDC_ANNOTATION]: formatOidcAnnotation(oidc) }
    },
    spec
  }
}

function withoutAudience(destination: Record<string, unknown>): Record<string, unknown> {
  const { audience: _audience, ...rest } = destination
  return rest
}

/** The condition Knative's sources report their OIDC identity by. */
export const OIDC_CONDITION = 'OIDCIdentityCreated'

/**
 * The status with what Knative writes for OIDC: `sinkAudience`, `auth.serviceAccountName` and the condition
 * OIDCIdentityCreated (True, or False with why and Ready False). A source with no audience gets none of them.
 * `written` is the object's status as it stands.
 */
export function withOidcStatus(
  status: Record<string, unknown>,
  written: unknown,
  oidc: OidcAudiences | undefined,
  failure: string | undefined,
  now: Date
): Record<string, unknown> {
  if (oidc === undefined) return status
  const conditions = (status['conditions'] as KubeCondition[] | undefined) ?? []
  // The transition time stays what the object's status says while the condition's status holds.
  const previous = (written as { conditions?: readonly KubeCondition[] } | undefined)?.conditions?.find(
    c => c.type === OIDC_CONDITION
  )
  const state = failure === undefined ? 'True' : 'False'
  const identity: KubeCondition = {
    type: OIDC_CONDITION,
    status: state,
    ...(failure === undefined ? {} : { reason: 'OIDCIdentityNotCreated', message: failure }),
    lastTransitionTime:
      previous?.status === state && previous.lastTransitionTime !== undefined
        ? previous.lastTransitionTime
        : now.toISOString()
  }
  const others = conditions
    .filter(c => c.type !== OIDC_CONDITION)
    .map(c =>
      c.type === 'Ready' && failure !== undefined
        ? { ...c, status: 'False' as const, reason: 'OIDCIdentityNotCreated', message: failure }
        : c
    )
  return {
    ...status,
    ...(oidc.sink === undefined ? {} : { sinkAudience: oidc.sink }),
    auth: { serviceAccountName: oidc.serviceAccountName },
    conditions: [...others, identity].sort((a, b) => a.type.localeCompare(b.type))
  }
}

/** A token from the TokenRequest API: used until half its life is gone, then asked for again. */
export interface IssuedToken {
  readonly token: string
  readonly issuedAt: number
  readonly expiresAt: number
}

export function needsRenewal(token: IssuedToken | undefined, now: number): boolean {
  return token === undefined || now >= token.issuedAt + (token.expiresAt - token.issuedAt) / 2
}
