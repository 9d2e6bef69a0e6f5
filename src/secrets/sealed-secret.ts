import { checkDns1123Label, checkDns1123Subdomain, resourceKey } from '../api/index.ts'
import type { SealedSecretSpec, SecretResource } from '../api/index.ts'
import { ErrorCodes, ShoalError } from '../errors/index.ts'
import type { NewMetadata, StoredEntry, StoredSecret } from '../store/index.ts'
import { open, seal } from './envelope.ts'
import type { SecretKey } from './secret-key.ts'

/** A Secret as written to the store (and forwarded between controller replicas): no value in clear. */
export interface SealedSecretObject {
  readonly apiVersion: 'v1'
  readonly kind: 'Secret'
  readonly metadata: NewMetadata
  readonly spec: SealedSecretSpec
}

/** A Secret's values, or why they cannot be read. */
export type SecretValues =
  | { readonly kind: 'opened'; readonly values: ReadonlyMap<string, Buffer> }
  | { readonly kind: 'failed'; readonly reason: string }

/** The store form of a validated Secret: its values sealed under `key`, bound to its namespace and name. */
export function sealSecret(secret: SecretResource, key: SecretKey): SealedSecretObject {
  const { name, namespace, labels, annotations } = secret.metadata
  const plaintext = Buffer.from(JSON.stringify(secret.data), 'utf8')
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace, ...(labels ? { labels } : {}), ...(annotations ? { annotations } : {}) },
    spec: {
      type: secret.type,
      keys: Object.keys(secret.data).sort(),
      sealed: seal(plaintext, key, resourceKey('Secret', namespace, name))
    }
  }
}

/**
 * Checks a sealed Secret another replica forwarded (the owner validates every write it appends). It cannot
 * open the values, and need not: only their shape is checked.
 */
export function checkSealedSecret(input: unknown): SealedSecretObject {
  const object = input as Partial<SealedSecretObject> | undefined
  const metadata = object?.metadata
  const spec = object?.spec
  const sealed = spec?.sealed
  const ok =
    object?.apiVersion === 'v1' &&
    object.kind === 'Secret' &&
    typeof metadata?.name === 'string' &&
    checkDns1123Subdomain(metadata.name) === undefined &&
    typeof metadata.namespace === 'string' &&
    checkDns1123Label(metadata.namespace) === undefined &&
    typeof spec?.type === 'string' &&
    Array.isArray(spec.keys) &&
    spec.keys.every(k => typeof k === 'string') &&
    sealed?.alg === 'AES-256-GCM' &&
    [sealed.kid, sealed.iv, sealed.tag, sealed.data].every(v => typeof v === 'string')
  if (!ok) throw new ShoalError(ErrorCodes.MALFORMED, 'a forwarded Secret must be sealed')
  const { name, namespace, labels, annotations } = metadata
  const { type, keys } = spec
  const { alg, kid, iv, tag, data } = sealed
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace, ...(labels ? { labels } : {}), ...(annotations ? { annotations } : {}) },
    spec: { type, keys: [...keys], sealed: { alg, kid, iv, tag, data } }
  }
}

/** Opens a stored Secret's values with `key`; a missing key or a wrong one is a reason, not an exception. */
export function openSecret(object: StoredSecret, key: SecretKey | undefined): SecretValues {
  const spec = object.spec
  if (spec.sealed === undefined) return { kind: 'failed', reason: 'it holds no sealed values' }
  if (key === undefined) {
    return {
      kind: 'failed',
      reason: 'this process has no secret key to open it (give --secret-key-file or SHOAL_SECRET_KEY)'
    }
  }
  const opened = open(spec.sealed, key, resourceKey('Secret', object.metadata.namespace, object.metadata.name))
  if (opened.kind === 'failed') return opened
  let data: unknown
  try {
    data = JSON.parse(opened.plaintext.toString('utf8'))
  } catch {
    return { kind: 'failed', reason: 'its sealed values are not readable' }
  }
  const values = new Map<string, Buffer>()
  for (const [k, v] of Object.entries(data as Record<string, string>)) values.set(k, Buffer.from(v, 'base64'))
  return { kind: 'opened', values }
}

/**
 * How the API shows a stored Secret: metadata, type and the names of its keys, never a value (sealed or not).
 * `keys` replaces `data`, so that a shown Secret applied again is refused rather than stored without values.
 */
export function presentSecret(entry: StoredEntry<StoredSecret>): unknown {
  const spec = entry.object.spec
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { ...entry.object.metadata, resourceVersion: entry.resourceVersion },
    type: spec.type,
    keys: [...spec.keys]
  }
}
