import { readFile } from 'node:fs/promises'
import { Agent, request } from 'undici'
import { ErrorCodes, ShoalError } from '../errors/index.ts'

/** Where a pod finds its service account's token and the cluster's CA. */
export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount'

export interface StatefulSetScalerOptions {
  readonly namespace: string
  readonly name: string
  /** The Kubernetes API; default `https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT` (in a pod). */
  readonly apiUrl?: string
  /** The bearer token's file, read at every call (projected tokens rotate); default the service account's. */
  readonly tokenPath?: string
  /** The API's CA certificate (PEM); default the service account's `ca.crt` when the API is https. */
  readonly caPath?: string
  readonly env?: NodeJS.ProcessEnv
}

/**
 * Writes the pool's decision to the dispatcher StatefulSet's scale subresource — what `kubectl scale` does: a
 * merge-patch of `{"spec":{"replicas":N}}` to `/apis/apps/v1/namespaces/NS/statefulsets/NAME/scale`. The
 * StatefulSet controller then starts or removes the highest ordinals, as `shoal up`'s supervisor does.
 */
export class StatefulSetScaler {
  readonly #url: string
  readonly #tokenPath: string
  readonly #caPath: string | undefined
  #agent: Agent | undefined
  /** The replicas last written successfully: the same decision is not written again. */
  #written: number | undefined
  #writing: Promise<void> = Promise.resolve()

  constructor(options: StatefulSetScalerOptions) {
    const env = options.env ?? process.env
    const api = options.apiUrl ?? inClusterUrl(env)
    this.#url = `${api.replace(/\/$/, '')}/apis/apps/v1/namespaces/${encodeURIComponent(options.namespace)}/statefulsets/${encodeURIComponent(options.name)}/scale`
    this.#tokenPath = options.tokenPath ?? `${SERVICE_ACCOUNT_DIR}/token`
    this.#caPath = options.caPath ?? (api.startsWith('https:') ? `${SERVICE_ACCOUNT_DIR}/ca.crt` : undefined)
  }

  /** The scale subresource's URL. */
  get url(): string {
    return this.#url
  }

  /** Sets spec.replicas unless this scaler already wrote that number; calls are serialised. */
  apply(replicas: number): Promise<void> {
    const run = this.#writing.then(async () => {
      if (this.#written === replicas) return
      await this.#patch(replicas)
      this.#written = replicas
    })
    this.#writing = run.catch(() => undefined)
    return run
  }

  async close(): Promise<void> {
    await this.#writing
    await this.#agent?.close()
  }

  async #patch(replicas: number): Promise<void> {
    const token = (await readFile(this.#tokenPath, 'utf8')).trim()
    if (this.#caPath !== undefined && this.#agent === undefined) {
      this.#agent = new Agent({ connect: { ca: await readFile(this.#caPath, 'utf8') } })
    }
    const response = await request(this.#url, {
      method: 'PATCH',
      headers: {
        authorization: `Bearer ${token}`,
        'content-type': 'application/merge-patch+json',
        accept: 'application/json'
      },
      body: JSON.stringify({ spec: { replicas } }),
      headersTimeout: 10_000,
      bodyTimeout: 10_000,
      ...(this.#agent === undefined ? {} : { dispatcher: this.#agent })
    })
    const text = await response.body.text()
    if (response.statusCode >= 300) {
      let message = text
      try {
        message = (JSON.parse(text) as { message?: string }).message ?? text
      } catch {
        // not a Status object
      }
      throw new ShoalError(
        ErrorCodes.UNAVAILABLE,
        `the Kubernetes API refused to scale ${this.#url} to ${replicas}: ${response.statusCode} ${message}`,
        { retriable: response.statusCode >= 500 || response.statusCode === 429 }
      )
    }
  }
}

function inClusterUrl(env: NodeJS.ProcessEnv): string {
  const host = env['KUBERNETES_SERVICE_HOST']
  const port = env['KUBERNETES_SERVICE_PORT'] ?? '443'
  if (!host) {
    throw new ShoalError(
      ErrorCodes.USAGE,
      '--statefulset needs the Kubernetes API: KUBERNETES_SERVICE_HOST is not set (run in a pod, or set it)'
    )
  }
  return `https://${host.includes(':') ? `[${host}]` : host}:${port}`
}
