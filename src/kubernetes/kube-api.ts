// The Kubernetes API as the operator uses it: list and watch (informers that resume after a dropped watch), and the
// few writes it makes — a finalizer, the status subresource, an Event. Built on @kubernetes/client-node.
import {
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  PatchStrategy,
  makeInformer,
  setHeaderOptions
} from '@kubernetes/client-node'
import type { Informer, KubernetesObject, ObjectCache } from '@kubernetes/client-node'
import type { KindInfo } from '../api/index.ts'
import { ErrorCodes, ShoalError } from '../errors/index.ts'
import type { KubeSource } from './mirror.ts'
import type { KubeSecret } from './secrets.ts'

/** A ServiceAccount as the operator reads it: whose it is. */
export interface KubeServiceAccount {
  readonly metadata?: {
    readonly ownerReferences?: readonly { readonly uid?: string; readonly controller?: boolean }[]
  }
}

export type SourceInformer = Informer<KubernetesObject & KubeSource> & ObjectCache<KubernetesObject & KubeSource>
export type NamespaceInformer = Informer<KubernetesObject> & ObjectCache<KubernetesObject>

/**
 * Where the API is: a kubeconfig file, or (none given) `KUBECONFIG`, then the pod's in-cluster account (its token
 * file read again as it rotates). Outside a pod with neither, a usage error says what to give.
 */
export function loadKubeConfig(
  file: string | undefined,
  neededBy: string,
  env: NodeJS.ProcessEnv = process.env
): KubeConfig {
  const config = new KubeConfig()
  try {
    if (file !== undefined) config.loadFromFile(file)
    else if (env['KUBECONFIG']) config.loadFromDefault()
    else if (env['KUBERNETES_SERVICE_HOST']) config.loadFromCluster()
    else {
      throw new ShoalError(
        ErrorCodes.USAGE,
        `${neededBy} needs the Kubernetes API: give --kubeconfig FILE, set KUBECONFIG, or run in a pod (KUBERNETES_SERVICE_HOST is not set)`
      )
    }
  } catch (error) {
    if (error instanceof ShoalError) throw error
    throw new ShoalError(
      ErrorCodes.USAGE,
      `--kubeconfig ${file ?? env['KUBECONFIG'] ?? ''}: ${(error as Error).message}`,
      { cause: error }
    )
  }
  if (config.getCurrentCluster() === null) {
    throw new ShoalError(
      ErrorCodes.USAGE,
      `--kubeconfig ${file ?? env['KUBECONFIG'] ?? ''}: it names no current cluster`
    )
  }
  return config
}

export const MERGE_PATCH = setHeaderOptions('Content-Type', PatchStrategy.MergePatch)
const JSON_PATCH = setHeaderOptions('Content-Type', PatchStrategy.JsonPatch)

/** Where an object of a kind is, as the custom objects API names it. */
function objectOf(info: KindInfo, source: KubeSource) {
  const { namespace = '', name = '' } = source.metadata ?? {}
  return { group: info.group, version: info.version, namespace, plural: info.plural, name }
}

/** The calls the operator makes, one place. */
export class KubeApi {
  readonly config: KubeConfig
  readonly #objects: CustomObjectsApi
  readonly #core: CoreV1Api

  constructor(config: KubeConfig) {
    this.config = config
    this.#objects = config.makeApiClient(CustomObjectsApi)
    this.#core = config.makeApiClient(CoreV1Api)
  }

  /** Every object of a kind in every namespace, at its storage version, kept current by a watch. */
  sourceInformer(info: KindInfo): SourceInformer {
    const { group, version, plural } = info
    return makeInformer<KubernetesObject & KubeSource>(
      this.config,
      `/apis/${group}/${version}/${plural}`,
      async () => (await this.#objects.listClusterCustomObject({ group, version, plural })) as never
    )
  }

  namespaceInformer(): NamespaceInformer {
    return makeInformer<KubernetesObject>(this.config, '/api/v1/namespaces', () => this.#core.listNamespace())
  }

  /**
   * Replaces the object's finalizers, only if it is still at `resourceVersion` (a JSON patch's test): a finalizer
   * another controller added meanwhile is never dropped.
   */
  async setFinalizers(info: KindInfo, source: KubeSource, finalizers: readonly string[]): Promise<void> {
    const metadata = source.metadata ?? {}
    await this.#objects.patchNamespacedCustomObject(
      {
        ...objectOf(info, source),
        body: [
          { op: 'test', path: '/metadata/resourceVersion', value: metadata.resourceVersion },
          { op: metadata.finalizers === undefined ? 'add' : 'replace', path: '/metadata/finalizers', value: finalizers }
        ]
      },
      JSON_PATCH
    )
  }

  /** A Secret, or NotFound thrown as the API answered it. */
  async secret(namespace: string, name: string): Promise<KubeSecret> {
    return await this.#core.readNamespacedSecret({ namespace, name })
  }

  /** A ServiceAccount, or undefined when there is none. */
  async serviceAccount(namespace: string, name: string): Promise<KubeServiceAccount | undefined> {
    try {
      return await this.#core.readNamespacedServiceAccount({ namespace, name })
    } catch (error) {
      if ((error as { code?: unknown }).code === 404) return undefined
      throw error
    }
  }

  /** Creates a source's ServiceAccount, owned by (and so deleted with) the source. */
  async createServiceAccount(info: KindInfo, source: KubeSource, name: string, description: string): Promise<void> {
    const metadata = source.metadata ?? {}
    await this.#core.createNamespacedServiceAccount({
      namespace: metadata.namespace ?? 'default',
      body: {
        metadata: {
          name,
          namespace: metadata.namespace ?? 'default',
          annotations: { description },
          ownerReferences: [
            {
              apiVersion: source.apiVersion ?? `${info.group}/${info.version}`,
              kind: info.kind,
              name: metadata.name ?? '',
              uid: metadata.uid ?? '',
              controller: true,
              blockOwnerDeletion: false
            }
          ]
        }
      }
    })
  }

  /** A token of a ServiceAccount for one audience, through the TokenRequest API. */
  async requestToken(
    namespace: string,
    name: string,
    audience: string,
    expirationSeconds: number
  ): Promise<{ readonly token: string; readonly expiresAt: number }> {
    const answer = await this.#core.createNamespacedServiceAccountToken({
      namespace,
      name,
      body: { spec: { audiences: [audience], expirationSeconds } }
    })
    const token = answer.status?.token
    if (token === undefined || token === '')
      throw new Error(`the TokenRequest for ${namespace}/${name} returned no token`)
    const expiry = answer.status?.expirationTimestamp
    return {
      token,
      expiresAt: expiry === undefined ? Date.now() + expirationSeconds * 1000 : new Date(expiry).getTime()
    }
  }

  /** Writes the status subresource (a merge patch of `status`; lists such as conditions are replaced whole). */
  async patchStatus(info: KindInfo, source: KubeSource, status: Record<string, unknown>): Promise<void> {
    await this.#objects.patchNamespacedCustomObjectStatus({ ...objectOf(info, source), body: { status } }, MERGE_PATCH)
  }

  /** A Kubernetes Event on the object (`kubectl describe` shows it). */
  async event(info: KindInfo, source: KubeSource, type: 'Normal' | 'Warning', reason: string, message: string) {
    const metadata = source.metadata ?? {}
    const now = new Date()
    await this.#core.createNamespacedEvent({
      namespace: metadata.namespace ?? 'default',
      body: {
        metadata: { generateName: `${metadata.name ?? 'source'}.`, namespace: metadata.namespace ?? 'default' },
        involvedObject: {
          apiVersion: source.apiVersion ?? `${info.group}/${info.version}`,
          kind: info.kind,
          name: metadata.name ?? '',
          namespace: metadata.namespace ?? 'default',
          ...(metadata.uid === undefined ? {} : { uid: metadata.uid }),
          ...(metadata.resourceVersion === undefined ? {} : { resourceVersion: metadata.resourceVersion })
        },
        type,
        reason,
        message,
        source: { component: 'shoal-controller' },
        firstTimestamp: now,
        lastTimestamp: now,
        count: 1
      }
    })
  }
}
