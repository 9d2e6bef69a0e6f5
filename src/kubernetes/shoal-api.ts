// Shoal's own resource API as the operator calls it: the controller's URL, with the replicas' internal token, so a
// source from Kubernetes goes through the same admission (validation, defaults, tenancy, forwarding to the owner of
// its bucket) as one from `shoal apply`.
import { request } from 'undici'
import type { Dispatcher } from 'undici'
import type { KindInfo } from '../api/index.ts'
import type { ShoalManifest, ShoalObject } from './mirror.ts'

/** What the API answered: the object, or a Kubernetes-style Status with its HTTP code. */
export type ShoalAnswer =
  | { readonly ok: true; readonly object: ShoalObject }
  | { readonly ok: false; readonly code: number; readonly reason: string; readonly message: string }

export interface ShoalApiOptions {
  /** The controller's own URL. */
  readonly url: string
  readonly headers: Readonly<Record<string, string>>
  /** A TLS agent that trusts the controller's certificate, when it serves HTTPS. */
  readonly dispatcher?: Dispatcher
}

export class ShoalApi {
  readonly #options: ShoalApiOptions

  constructor(options: ShoalApiOptions) {
    this.#options = options
  }

  get(info: KindInfo, apiVersion: string, namespace: string, name: string): Promise<ShoalAnswer> {
    return this.#call('GET', `${collection(info, apiVersion, namespace)}/${encodeURIComponent(name)}`)
  }

  create(info: KindInfo, manifest: ShoalManifest): Promise<ShoalAnswer> {
    return this.#call('POST', collection(info, manifest.apiVersion, manifest.metadata.namespace), manifest)
  }

  /** A replace that holds only while the object is at `resourceVersion`. */
  replace(info: KindInfo, manifest: ShoalManifest, resourceVersion: string | undefined): Promise<ShoalAnswer> {
    const body = { ...manifest, metadata: { ...manifest.metadata, ...(resourceVersion ? { resourceVersion } : {}) } }
    const path = `${collection(info, manifest.apiVersion, manifest.metadata.namespace)}/${encodeURIComponent(manifest.metadata.name)}`
    return this.#call('PUT', path, body)
  }

  /** Creates or replaces a Secret (its values are never shown back, so there is nothing to compare). */
  async putSecret(secret: Record<string, unknown>, namespace: string, name: string): Promise<ShoalAnswer> {
    const replaced = await this.#call('PUT', `${secrets(namespace)}/${encodeURIComponent(name)}`, secret)
    if (replaced.ok || replaced.code !== 404) return replaced
    return this.#call('POST', secrets(namespace), secret)
  }

  removeSecret(namespace: string, name: string): Promise<ShoalAnswer> {
    return this.#call('DELETE', `${secrets(namespace)}/${encodeURIComponent(name)}`)
  }

  remove(info: KindInfo, namespace: string, name: string): Promise<ShoalAnswer> {
    return this.#call(
      'DELETE',
      `${collection(info, `${info.group}/${info.version}`, namespace)}/${encodeURIComponent(name)}`
    )
  }

  async #call(method: string, path: string, body?: unknown): Promise<ShoalAnswer> {
    const answer = await request(`${this.#options.url}${path}`, {
      method: method as 'GET',
      headers: {
        ...this.#options.headers,
        ...(body === undefined ? {} : { 'content-type': 'application/json' })
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      ...(this.#options.dispatcher === undefined ? {} : { dispatcher: this.#options.dispatcher }),
      headersTimeout: 15_000,
      bodyTimeout: 15_000
    })
    const text = await answer.body.text()
    const parsed = text === '' ? {} : (JSON.parse(text) as Record<string, unknown>)
    if (answer.statusCode < 300) return { ok: true, object: parsed }
    return {
      ok: false,
      code: answer.statusCode,
      reason: typeof parsed['reason'] === 'string' ? parsed['reason'] : `HTTP${answer.statusCode}`,
      message: typeof parsed['message'] === 'string' ? parsed['message'] : text
    }
  }
}

function secrets(namespace: string): string {
  return `/api/v1/namespaces/${encodeURIComponent(namespace)}/secrets`
}

function collection(info: KindInfo, apiVersion: string, namespace: string): string {
  return `/apis/${apiVersion}/namespaces/${encodeURIComponent(namespace)}/${info.plural}`
}
