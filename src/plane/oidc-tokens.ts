import type { OidcTokenLookup } from '../delivery/index.ts'
import { openSecret } from '../secrets/index.ts'
import type { SecretKey, SecretValues } from '../secrets/index.ts'
import { isSealedSecret } from '../store/index.ts'
import type { StoredObject } from '../store/index.ts'

/**
 * Sinks' OIDC tokens as a dispatcher finds them: in the Secret the operator keeps for the source's service account
 * (docs/kubernetes.md, "OIDC to sinks"), read from the dispatcher's copy of the resources topic. A Secret is opened
 * once per stored version; a rotated token is a new version, read on the next request.
 */
export function oidcTokenLookup(
  secret: (key: string) => StoredObject | undefined,
  key: SecretKey | undefined
): OidcTokenLookup {
  const opened = new WeakMap<StoredObject, SecretValues>()
  return ref => {
    const object = secret(ref.secret)
    if (object === undefined || !isSealedSecret(object)) {
      return { kind: 'missing', reason: `${ref.secret} is not there yet (the operator writes it)` }
    }
    let values = opened.get(object)
    if (values === undefined) {
      values = openSecret(object, key)
      opened.set(object, values)
    }
    if (values.kind === 'failed') return { kind: 'missing', reason: `${ref.secret}: ${values.reason}` }
    const token = values.values.get(ref.key)
    if (token === undefined) return { kind: 'missing', reason: `${ref.secret} has no token for it yet` }
    return { kind: 'token', token: token.toString('utf8') }
  }
}
