import { kindByApiVersion, kinds, servedApiVersions } from '../api/index.ts'
import type { KindInfo } from '../api/index.ts'
import { nameOf, namespaceOf } from './resources.ts'
import type { JsonObject } from './resources.ts'

/** Which resource a manifest object is, or why the client cannot tell. */
export type ManifestTarget =
  | { readonly ok: true; readonly kind: KindInfo; readonly namespace: string; readonly name: string | undefined }
  | { readonly ok: false; readonly message: string }

/**
 * Maps a manifest object to its kind and namespace. The object's own namespace wins over the default;
 * an explicit `-n` that contradicts it is an error, as in kubectl, rather than a silent choice.
 */
export function manifestTarget(
  object: JsonObject,
  source: string,
  namespace: { readonly value: string; readonly explicit: boolean }
): ManifestTarget {
  const apiVersion = typeof object['apiVersion'] === 'string' ? object['apiVersion'] : ''
  const kindName = typeof object['kind'] === 'string' ? object['kind'] : ''
  const name = nameOf(object)
  const label = name === undefined ? 'an object' : `"${name}"`
  if (apiVersion === '' || kindName === '') {
    return { ok: false, message: `${label} in ${source} has no apiVersion or no kind` }
  }
  const kind = kindByApiVersion(apiVersion, kindName)
  if (kind === undefined) {
    const served = kinds.map(k => `${k.kind} (${servedApiVersions(k).join(', ')})`).join(', ')
    return {
      ok: false,
      message: `${label} in ${source}: no matches for kind "${kindName}" in version "${apiVersion}"; Shoal serves ${served}`
    }
  }
  const own = namespaceOf(object)
  if (own !== undefined && own !== '' && namespace.explicit && own !== namespace.value) {
    return {
      ok: false,
      message: `the namespace from the provided object "${own}" does not match the namespace "${namespace.value}" (${kind.kind} ${label} in ${source}); pass -n ${own} or remove the object's namespace`
    }
  }
  return { ok: true, kind, namespace: own === undefined || own === '' ? namespace.value : own, name }
}
