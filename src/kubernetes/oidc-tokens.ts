// OIDC to sinks, the I/O (docs/kubernetes.md, "OIDC to sinks"): each source that names an audience gets its own
// ServiceAccount, as Knative's sources do, and tokens of it for each audience from the TokenRequest API. They go into
// a Shoal Secret of the ServiceAccount's name (sealed in Shoal's log), where the dispatchers read them; each is asked
// for again when half its life is gone.
import { oidcTokenKey } from '../api/index.ts'
import type { KindInfo, OidcAudiences } from '../api/index.ts'
import type { KubeApi } from './kube-api.ts'
import type { KubeSource } from './mirror.ts'
import { needsRenewal } from './oidc.ts'
import type { IssuedToken } from './oidc.ts'
import type { ShoalApi } from './shoal-api.ts'

/** How long a token is asked for: an hour, as Kubernetes' own projected tokens; renewed after half of it. */
export const TOKEN_SECONDS = 3600

export class OidcTokenKeeper {
  readonly #kube: Pick<KubeApi, 'serviceAccount' | 'createServiceAccount' | 'requestToken'>
  readonly #shoal: Pick<ShoalApi, 'putSecret'>
  readonly #now: () => number
  /** By `namespace/serviceAccount`: the ServiceAccount is known to be the source's, and the tokens written. */
  readonly #accounts = new Map<string, Map<string, IssuedToken>>()

  constructor(
    kube: Pick<KubeApi, 'serviceAccount' | 'createServiceAccount' | 'requestToken'>,
    shoal: Pick<ShoalApi, 'putSecret'>,
    now: () => number = Date.now
  ) {
    this.#kube = kube
    this.#shoal = shoal
    this.#now = now
  }

  /**
   * Makes sure the source's ServiceAccount exists (and is the source's) and that Shoal holds a live token for each
   * audience. Throws an Error whose message says what failed, for the source's status.
   */
  async ensure(info: KindInfo, source: KubeSource, oidc: OidcAudiences): Promise<void> {
    const namespace = source.metadata?.namespace ?? 'default'
    const account = oidc.serviceAccountName
    const key = `${namespace}/${account}`
    let tokens = this.#accounts.get(key)
    if (tokens === undefined) {
      await this.#ownAccount(info, source, namespace, account)
      tokens = new Map()
    }
    const audiences = [oidc.sink, oidc.deadLetterSink].filter((a): a is string => a !== undefined)
    const now = this.#now()
    const stale = audiences.filter(audience => needsRenewal(tokens.get(audience), now))
    const dropped = [...tokens.keys()].filter(audience => !audiences.includes(audience))
    if (stale.length === 0 && dropped.length === 0) return
    const next = new Map([...tokens].filter(([audience]) => audiences.includes(audience)))
    for (const audience of stale) {
      try {
        const issued = await this.#kube.requestToken(namespace, account, audience, TOKEN_SECONDS)
        next.set(audience, { token: issued.token, issuedAt: now, expiresAt: issued.expiresAt })
      } catch (error) {
        throw new Error(
          `a token for audience ${JSON.stringify(audience)} of ServiceAccount ${key}: ${messageOf(error)}`,
          { cause: error }
        )
      }
    }
    const data = Object.fromEntries(
      [...next].map(([audience, issued]) => [oidcTokenKey(audience), Buffer.from(issued.token).toString('base64')])
    )
    const put = await this.#shoal.putSecret(
      { apiVersion: 'v1', kind: 'Secret', metadata: { name: account, namespace }, type: 'Opaque', data },
      namespace,
      account
    )
    if (!put.ok) throw new Error(`writing the tokens of ${key} into Shoal: ${put.code} ${put.message}`)
    this.#accounts.set(key, next)
  }

  /** Forgets what was written (another replica writes now, or the source is gone). */
  forget(namespace?: string, account?: string): void {
    if (namespace === undefined) this.#accounts.clear()
    else this.#accounts.delete(`${namespace}/${account ?? ''}`)
  }

  async #ownAccount(info: KindInfo, source: KubeSource, namespace: string, account: string): Promise<void> {
    let found
    try {
      found = await this.#kube.serviceAccount(namespace, account)
      if (found === undefined) {
        const what = `Service Account for OIDC Authentication for ${info.kind} ${JSON.stringify(source.metadata?.name ?? '')}`
        await this.#kube.createServiceAccount(info, source, account, what)
        return
      }
    } catch (error) {
      throw new Error(`the ServiceAccount ${namespace}/${account}: ${messageOf(error)}`, { cause: error })
    }
    const uid = source.metadata?.uid
    const owned = (found.metadata?.ownerReferences ?? []).some(o => o.controller === true && o.uid === uid)
    if (!owned) {
      throw new Error(
        `the ServiceAccount ${namespace}/${account} exists and is not controlled by ${info.kind} ${source.metadata?.name ?? ''}`
      )
    }
  }
}

/** What an API call's failure says: the API's own message when it gave one. */
function messageOf(error: unknown): string {
  const body = (error as { body?: unknown }).body
  if (typeof body === 'string') {
    try {
      const message = (JSON.parse(body) as { message?: unknown }).message
      if (typeof message === 'string') return message
    } catch {
      // not JSON: the error's own message below
    }
  }
  return error instanceof Error ? error.message : String(error)
}
