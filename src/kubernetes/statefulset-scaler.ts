// The pool's size written to the dispatcher StatefulSet's scale subresource — what `kubectl scale` does: a merge
// patch of `{"spec":{"replicas":N}}` to `/apis/apps/v1/namespaces/NS/statefulsets/NAME/scale`. The StatefulSet
// controller then starts or removes the highest ordinals, as `shoal up`'s supervisor does (docs/pool.md).
import { AppsV1Api } from '@kubernetes/client-node'
import type { KubeConfig } from '@kubernetes/client-node'
import { ErrorCodes, ShoalError } from '../errors/index.ts'
import { MERGE_PATCH } from './kube-api.ts'

export class StatefulSetScaler {
  readonly #apps: AppsV1Api
  readonly #namespace: string
  readonly #name: string
  /** The replicas last written successfully: the same decision is not written again. */
  #written: number | undefined
  #writing: Promise<void> = Promise.resolve()

  constructor(config: KubeConfig, ref: { readonly namespace: string; readonly name: string }) {
    this.#apps = config.makeApiClient(AppsV1Api)
    this.#namespace = ref.namespace
    this.#name = ref.name
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
  }

  async #patch(replicas: number): Promise<void> {
    try {
      await this.#apps.patchNamespacedStatefulSetScale(
        { namespace: this.#namespace, name: this.#name, body: { spec: { replicas } } },
        MERGE_PATCH
      )
    } catch (error) {
      const code = (error as { code?: unknown }).code
      const body = (error as { body?: unknown }).body
      let message = typeof body === 'string' ? body : String(error)
      try {
        message = (JSON.parse(message) as { message?: string }).message ?? message
      } catch {
        // not a Status object
      }
      throw new ShoalError(
        ErrorCodes.UNAVAILABLE,
        `the Kubernetes API refused to scale statefulset ${this.#namespace}/${this.#name} to ${replicas}: ${String(code)} ${message}`,
        { retriable: typeof code !== 'number' || code >= 500 || code === 429, cause: error }
      )
    }
  }
}
