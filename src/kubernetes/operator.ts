// Operator mode (`shoal controller --kubernetes`): Knative's KafkaSource and PingSource objects in the Kubernetes
// API are the users' source of truth; Shoal runs those it claims and writes their status back
// (docs/kubernetes.md, "Sources through the Kubernetes API").
import { KafkaSourceKind, PingSourceKind } from '../api/index.ts'
import type { KindInfo, OidcAudiences } from '../api/index.ts'
import type { Log } from '../log/index.ts'
import type { KubeApi, NamespaceInformer, SourceInformer } from './kube-api.ts'
import {
  FINALIZER,
  claims,
  hasFinalizer,
  isDeleting,
  kubeStatus,
  objectKey,
  refusedStatus,
  shoalManifest,
  inSync
} from './mirror.ts'
import type { ClaimRule, KubeSource } from './mirror.ts'
import type { ShoalApi } from './shoal-api.ts'
import { oidcOf, withOidcAnnotation, withOidcStatus } from './oidc.ts'
import { OidcTokenKeeper } from './oidc-tokens.ts'
import { secretNamesOf, shoalSecret } from './secrets.ts'
import { resolveSinks } from './sinks.ts'
import type { AddressLookup } from './sinks.ts'

export interface OperatorOptions {
  readonly kube: KubeApi
  readonly shoal: ShoalApi
  readonly claim: ClaimRule
  /** Reads an Addressable's URL, for sink refs Shoal does not resolve itself. */
  readonly addresses: AddressLookup
  /** Whether this replica leads the scheduler: only the leader writes, to Shoal and to Kubernetes. */
  readonly leading: () => boolean
  /** Whether no dispatcher delivers for the source (`Kind/namespace/name`) any more. */
  readonly deliveryStopped: (sourceKey: string) => boolean
  readonly log: Log
  /** How often every object is looked at again (status, and anything a failed call left undone); default 2 s. */
  readonly resyncMs?: number
}

const KINDS: readonly KindInfo[] = [KafkaSourceKind, PingSourceKind]

/**
 * The pods that run a KafkaSource's consumers, as its scale subresource names them (`status.selector`): an HPA or a
 * KEDA ScaledObject on the source needs one. Every source's consumers run on the dispatcher pods of
 * deploy/kubernetes/dispatcher.yaml.
 */
export const DISPATCHER_SELECTOR = 'app.kubernetes.io/name=shoal-dispatcher'

function scaleSelector(info: KindInfo): { readonly selector?: string } {
  return info.kind === KafkaSourceKind.kind ? { selector: DISPATCHER_SELECTOR } : {}
}

/** How long a source being deleted is looked at again while dispatchers still run it. */
const DELETE_POLL_MS = 250

export class KubernetesOperator {
  readonly #options: OperatorOptions
  readonly #sources = new Map<KindInfo, SourceInformer>()
  readonly #namespaces: NamespaceInformer
  /** `kind|namespace/name` of objects to look at. */
  readonly #queue = new Set<string>()
  /** The status last written per object, as JSON: a status the API pruned is not written again and again. */
  readonly #written = new Map<string, string>()
  /** The refusal last reported per object, so an Event is made once per message. */
  readonly #refused = new Map<string, string>()
  /** The resourceVersion of each Kubernetes Secret last copied into Shoal, by `namespace/name`. */
  readonly #secretVersions = new Map<string, string>()
  /** The sources' OIDC ServiceAccounts and the tokens written for them. */
  readonly #tokens: OidcTokenKeeper
  #wake: (() => void) | undefined
  #stopped = false
  #running: Promise<void> | undefined
  #resync: NodeJS.Timeout | undefined
  #wasLeading = false

  constructor(options: OperatorOptions) {
    this.#options = options
    this.#tokens = new OidcTokenKeeper(options.kube, options.shoal)
    for (const info of KINDS) this.#sources.set(info, options.kube.sourceInformer(info))
    this.#namespaces = options.kube.namespaceInformer()
  }

  /** Lists and starts watching; resolves once the first lists are in. */
  async start(): Promise<void> {
    for (const [info, informer] of this.#sources) {
      const enqueue = (object: KubeSource) => this.#enqueue(info, objectKey(object))
      informer.on('add', enqueue)
      informer.on('update', enqueue)
      informer.on('delete', enqueue)
      this.#restartOnError(informer, info.plural)
    }
    this.#namespaces.on('update', () => this.#enqueueAll())
    this.#namespaces.on('add', () => this.#enqueueAll())
    this.#restartOnError(this.#namespaces, 'namespaces')
    await Promise.all([...this.#sources.values(), this.#namespaces].map(i => i.start()))
    this.#resync = setInterval(() => this.#tick(), this.#options.resyncMs ?? 2_000)
    this.#running = this.#work()
    this.#tick()
  }

  async stop(): Promise<void> {
    this.#stopped = true
    clearInterval(this.#resync)
    this.#wake?.()
    await this.#running
    await Promise.all([...this.#sources.values(), this.#namespaces].map(i => i.stop().catch(() => undefined)))
  }

  /** A dropped watch or a failed list (the API server went away) starts again, relisting, after a moment. */
  #restartOnError(informer: SourceInformer | NamespaceInformer, what: string): void {
    informer.on('error', (error: unknown) => {
      if (this.#stopped) return
      this.#options.log('warn', 'the Kubernetes watch failed; listing again', { what, error: String(error) })
      this.#relist(informer, what, 1)
    })
  }

  /** Starts the informer again until its list succeeds (the API server may still be away), backing off to 10 s. */
  #relist(informer: SourceInformer | NamespaceInformer, what: string, attempt: number): void {
    setTimeout(
      () => {
        if (this.#stopped) return
        informer.start().catch((error: unknown) => {
          this.#options.log('warn', 'listing from the Kubernetes API failed; trying again', {
            what,
            attempt,
            error: String(error)
          })
          this.#relist(informer, what, attempt + 1)
        })
      },
      Math.min(10_000, 500 * 2 ** Math.min(attempt, 5))
    ).unref()
  }

  #tick(): void {
    const leading = this.#options.leading()
    if (!leading && this.#wasLeading) {
      // Another replica writes now; what it writes is not known here.
      this.#written.clear()
      this.#refused.clear()
      this.#secretVersions.clear()
      this.#tokens.forget()
    }
    this.#wasLeading = leading
    if (leading) this.#enqueueAll()
  }

  #enqueueAll(): void {
    for (const [info, informer] of this.#sources)
      for (const object of informer.list()) this.#enqueue(info, objectKey(object))
  }

  #enqueue(info: KindInfo, key: string): void {
    this.#queue.add(`${info.kind}|${key}`)
    this.#wake?.()
  }

  async #work(): Promise<void> {
    while (!this.#stopped) {
      const next = this.#queue.values().next()
      if (next.done) {
        await new Promise<void>(resolve => (this.#wake = resolve))
        this.#wake = undefined
        continue
      }
      this.#queue.delete(next.value)
      if (!this.#options.leading()) continue
      const [kind, key] = next.value.split('|') as [string, string]
      const info = KINDS.find(k => k.kind === kind)!
      try {
        await this.#reconcile(info, key)
      } catch (error) {
        // The next resync tries again.
        this.#options.log('warn', 'reconciling a source from Kubernetes failed', {
          source: `${kind}/${key}`,
          error: String(error)
        })
      }
    }
  }

  async #reconcile(info: KindInfo, key: string): Promise<void> {
    const [namespace, name] = key.split('/') as [string, string]
    const object = this.#sources.get(info)!.get(name, namespace)
    if (object === undefined) {
      this.#forget(info, key)
      return
    }
    const namespaceLabels = this.#namespaces.get(namespace)?.metadata?.labels ?? {}
    if (!claims(object, namespaceLabels, this.#options.claim) || isDeleting(object)) {
      // Not Shoal's (any more), or being deleted: stop running it, then let the object go.
      if (hasFinalizer(object)) await this.#release(info, object)
      return
    }
    if (!hasFinalizer(object)) {
      // The finalizer first: from here on the object cannot vanish while a dispatcher still delivers for it.
      await this.#options.kube.setFinalizers(info, object, [...(object.metadata?.finalizers ?? []), FINALIZER])
      return
    }
    const sinks = await resolveSinks(object.spec, namespace, this.#options.addresses)
    if (sinks.kind === 'unresolved') {
      await this.#refuse(info, object, sinks.reason, sinks.message)
      return
    }
    // The tokens before the source: its first request already has one.
    const oidc = oidcOf(info, name, sinks.spec)
    if (oidc !== undefined) {
      try {
        await this.#tokens.ensure(info, object, oidc)
      } catch (error) {
        const message = `the source's OIDC identity: ${(error as Error).message}`
        await this.#refuse(info, object, 'OIDCIdentityNotCreated', message, oidc)
        return
      }
    }
    const manifest = withOidcAnnotation(shoalManifest(object, info, sinks.spec), oidc)
    await this.#copySecrets(namespace, secretNamesOf(object.spec))
    const shoal = this.#options.shoal
    let current = await shoal.get(info, manifest.apiVersion, namespace, name)
    if (!current.ok && current.code === 404) current = await shoal.create(info, manifest)
    else if (current.ok && !inSync(current.object, manifest)) {
      current = await shoal.replace(info, manifest, current.object.metadata?.resourceVersion)
    }
    if (!current.ok) {
      if (current.code >= 500 || current.code === 409) throw new Error(`${current.code} ${current.message}`)
      await this.#refuse(info, object, current.reason, current.message)
      return
    }
    this.#refused.delete(`${info.kind}|${key}`)
    // The status at the object's own version, as Shoal presents it now.
    const presented = await shoal.get(info, manifest.apiVersion, namespace, name)
    if (!presented.ok) return
    const status = { ...kubeStatus(object, presented.object, manifest), ...scaleSelector(info) }
    await this.#writeStatus(info, object, withOidcStatus(status, object.status, oidc, undefined, new Date()))
  }

  /**
   * Copies the Kubernetes Secrets a source refers to into Shoal, each again only when its resourceVersion moved. A
   * missing one is left to Shoal to report (the source's status names it).
   */
  async #copySecrets(namespace: string, names: readonly string[]): Promise<void> {
    for (const name of names) {
      let secret
      try {
        secret = await this.#options.kube.secret(namespace, name)
      } catch (error) {
        if ((error as { code?: unknown }).code === 404) continue
        throw error
      }
      const key = `${namespace}/${name}`
      const version = secret.metadata?.resourceVersion ?? ''
      if (this.#secretVersions.get(key) === version) continue
      const put = await this.#options.shoal.putSecret(shoalSecret(secret, namespace, name), namespace, name)
      if (!put.ok) throw new Error(`copying Secret ${key} into Shoal: ${put.code} ${put.message}`)
      this.#secretVersions.set(key, version)
    }
  }

  /**
   * Shoal refused the object (bad input), or the OIDC identity `oidcFailed` names could not be made: Ready False with
   * the message, and a Warning Event once.
   */
  async #refuse(
    info: KindInfo,
    object: KubeSource,
    reason: string,
    message: string,
    oidcFailed?: OidcAudiences
  ): Promise<void> {
    const key = `${info.kind}|${objectKey(object)}`
    const now = new Date()
    const refused = refusedStatus(object, reason, message, now)
    await this.#writeStatus(info, object, withOidcStatus(refused, object.status, oidcFailed, message, now))
    if (this.#refused.get(key) === message) return
    this.#refused.set(key, message)
    await this.#options.kube.event(info, object, 'Warning', reason, message)
  }

  async #writeStatus(info: KindInfo, object: KubeSource, status: Record<string, unknown>): Promise<void> {
    const key = `${info.kind}|${objectKey(object)}`
    const text = JSON.stringify(status)
    if (this.#written.get(key) === text) return
    await this.#options.kube.patchStatus(info, object, status)
    this.#written.set(key, text)
  }

  /** Deletes the source from Shoal and, once no dispatcher delivers for it, removes the finalizer. */
  async #release(info: KindInfo, object: KubeSource): Promise<void> {
    const namespace = object.metadata?.namespace ?? ''
    const name = object.metadata?.name ?? ''
    const removed = await this.#options.shoal.remove(info, namespace, name)
    if (!removed.ok && removed.code !== 404) throw new Error(`${removed.code} ${removed.message}`)
    if (!this.#options.deliveryStopped(`${info.kind}/${namespace}/${name}`)) {
      setTimeout(() => this.#enqueue(info, objectKey(object)), DELETE_POLL_MS).unref()
      return
    }
    const oidc = oidcOf(info, name, object.spec)
    if (oidc !== undefined) {
      // The source's tokens go with it (its ServiceAccount is the garbage collector's: the source owns it).
      const gone = await this.#options.shoal.removeSecret(namespace, oidc.serviceAccountName)
      if (!gone.ok && gone.code !== 404) throw new Error(`${gone.code} ${gone.message}`)
      this.#tokens.forget(namespace, oidc.serviceAccountName)
    }
    const finalizers = (object.metadata?.finalizers ?? []).filter(f => f !== FINALIZER)
    await this.#options.kube.setFinalizers(info, object, finalizers)
    this.#forget(info, objectKey(object))
    this.#options.log('info', 'a source from Kubernetes stopped', { source: `${info.kind}/${namespace}/${name}` })
  }

  #forget(info: KindInfo, key: string): void {
    this.#written.delete(`${info.kind}|${key}`)
    this.#refused.delete(`${info.kind}|${key}`)
  }
}
