import { hostname } from 'node:os'
import { checkServiceUrlTemplate, checkUpdate, DEFAULT_SERVICE_URL_TEMPLATE, sourceStatus } from '../api/index.ts'
import type { FlowControlRow, SourceStatus } from '../api/index.ts'
import type { ApiGuard, ApiTls } from '../auth/index.ts'
import { autoscaleSetting } from '../autoscale/index.ts'
import { ErrorCodes, ShoalError, invalid } from '../errors/index.ts'
import type { MemberStatus } from '../dispatcher/index.ts'
import type { KafkaConnection } from '../kafka/index.ts'
import { loadSchedulerConfig } from '../scheduler/index.ts'
import type { SchedulerConfig } from '../scheduler/index.ts'
import { sourceNet } from '../secrets/index.ts'
import type { SecretKey } from '../secrets/index.ts'
import { ApiServer } from '../server/index.ts'
import { ResourceStore, isKafkaSource, isSource } from '../store/index.ts'
import type { StoredObject } from '../store/index.ts'
import type { Logger } from '../log/index.ts'
import { isDispatcherKind, presentDispatcher, presentSource } from './presentation.ts'
import type { LiveDispatcher } from './presentation.ts'
import { DeliveryErrors } from './delivery-errors.ts'
import { FlowIndex } from './sink-flow.ts'
import { startObservability } from './observability.ts'
import { DeadMembers, MembersFollower, SchedulerLeader } from '../leader/index.ts'
import type { PoolOptions } from '../leader/index.ts'
import { MAX_POOL_SIZE } from '../pool/index.ts'
import { sourceOffsets } from './source-operations.ts'
import { SourceReconciler } from '../reconciler/index.ts'
import type { Log } from '../log/index.ts'
import {
  KubeApi,
  KubernetesOperator,
  ShoalApi,
  StatefulSetScaler,
  addressLookup,
  loadKubeConfig
} from '../kubernetes/index.ts'
import type { ClaimRule, KubeConfig } from '../kubernetes/index.ts'

export interface ControllerOptions {
  readonly brokers: readonly string[]
  readonly host?: string
  readonly port?: number
  readonly prefix?: string
  readonly buckets?: number
  /** A stable name for this replica; defaults to host name and port. */
  readonly replicaId?: string
  /** How a sink `ref` to a Service becomes a URL: `{name}` and `{namespace}` are replaced. */
  readonly serviceUrlTemplate?: string
  readonly sessionTimeoutMs?: number
  /** When a silent dispatcher counts as dead (DESIGN §4, "two timeouts"); default 10 s. */
  readonly livenessTimeoutMs?: number
  /** The scheduler's plugin configuration: a shipped profile (`ha`, `compact`) or a YAML file. */
  readonly schedulerConfig?: string
  readonly logger: Logger
  /** Tokens, tenants and request limits (src/auth); absent: single-tenant mode. */
  readonly guard?: ApiGuard
  /** Serve the API over HTTPS. */
  readonly tls?: ApiTls
  /** Seals Secrets in the store and opens them for the source's Kafka clients (docs/secrets.md); absent: none. */
  readonly secretKey?: SecretKey
  /** `--dispatchers MIN..MAX`: the leader sizes and drains the dispatcher pool (docs/pool.md). */
  readonly pool?: Omit<PoolOptions, 'onDecision'>
  /** `--statefulset NS/NAME`: the leader writes the pool's size to this StatefulSet's scale (Kubernetes). */
  readonly statefulSet?: { readonly namespace: string; readonly name: string }
  /** `--kubernetes`: run the Knative sources of this Kubernetes API (docs/kubernetes.md). */
  readonly kubernetes?: KubernetesOptions
  /** `--kubeconfig`: the Kubernetes API of both; absent: `KUBECONFIG`, then the pod's in-cluster account. */
  readonly kubeconfig?: string
}

export interface KubernetesOptions {
  /** Which sources are Shoal's: those labelled or annotated for it, or all. */
  readonly claim: ClaimRule
}

export interface RunningController {
  readonly url: string
  readonly replicaId: string
  readonly store: ResourceStore
  close(): Promise<void>
}

/**
 * What the API server shows comes from parts started after it (the members follower, the delivery errors, the
 * metrics): each is wired in here once its part runs.
 */
interface LateViews {
  liveDispatchers: () => readonly LiveDispatcher[]
  lastDeliveryError: DeliveryErrors['lastOf']
  observePass: (seconds: number) => void
  /** A source's flow control gates on alive dispatchers, from their heartbeats. */
  flowOf: (sourceKey: string) => readonly FlowControlRow[]
}

/** Starts one control-plane replica: the API server, then the store it serves. */
export async function startController(options: ControllerOptions): Promise<RunningController> {
  const log = options.logger
  // A bad scheduler config is refused before anything starts.
  const config = loadSchedulerConfig(options.schedulerConfig ?? 'ha')
  // So is a Kubernetes API that cannot be found, when a StatefulSet is to be scaled or sources run.
  const kube =
    options.statefulSet || options.kubernetes
      ? loadKubeConfig(options.kubeconfig, options.kubernetes ? '--kubernetes' : '--statefulset')
      : undefined
  const scaler = options.statefulSet && kube && new StatefulSetScaler(kube, options.statefulSet)
  const serviceUrlTemplate = options.serviceUrlTemplate ?? DEFAULT_SERVICE_URL_TEMPLATE
  const logTo: Log = (level, message, fields) => log[level](fields ?? {}, message)
  const views: LateViews = {
    liveDispatchers: () => [],
    lastDeliveryError: () => undefined,
    observePass: () => undefined,
    flowOf: () => []
  }
  const { server, url, replicaId } = await startServer(options, serviceUrlTemplate, views, logTo)
  const store = await openStore(options, server, { replicaId, url, serviceUrlTemplate, logTo })
  const connection = { brokers: options.brokers, clientId: `shoal-controller-${replicaId}` }
  const { members, deliveryErrors, leader } = await startLeading(options, store, server, {
    connection,
    config,
    scaler,
    views,
    logTo
  })
  views.liveDispatchers = () => members.members().map(liveDispatcherOf)
  const flowIndex = new FlowIndex()
  views.flowOf = key => flowIndex.of(views.liveDispatchers(), key)
  const observed = serveObservability(options, server, store, { replicaId, serviceUrlTemplate, members, views, logTo })
  server.attach(
    store,
    {
      propose: async () => leader.term?.propose() ?? notLeading(),
      approve: async revision => (leader.term ? leader.term.approve(revision) : notLeading()),
      autoscaling: async () => leader.term?.autoscaling() ?? notLeading(),
      pool: async () => leader.term?.pool() ?? notLeading()
    },
    sourceOffsets(store, options.secretKey)
  )
  leader.start()
  // On every replica, not only the leader's (src/leader/dead-members.ts).
  const deadMembers = new DeadMembers({
    connection,
    store,
    net: sourceNet(store, options.secretKey),
    members,
    log: logTo
  })
  deadMembers.start()
  const reconciler = new SourceReconciler({
    store,
    serviceUrlTemplate,
    log: logTo,
    ...(options.secretKey === undefined ? {} : { secretKey: options.secretKey })
  })
  reconciler.start()
  const operator =
    options.kubernetes && kube && (await startOperator(options.kubernetes, kube, server, leader, views, logTo))
  log.info({ replicaId, url }, 'controller ready')
  return {
    url,
    replicaId,
    store,
    async close() {
      const closing = server.close()
      await operator?.stop()
      reconciler.stop()
      await observed.close()
      deadMembers.stop()
      await leader.stop()
      await scaler?.close().catch(() => undefined)
      await members.close()
      await deliveryErrors.close()
      await store.close()
      await closing
    }
  }
}

/**
 * Operator mode: the Knative sources of a Kubernetes API, run through this replica's own API while it leads. A
 * source is stopped once the leader has withdrawn its contracts and every live dispatcher has applied that.
 */
async function startOperator(
  options: KubernetesOptions,
  config: KubeConfig,
  server: ApiServer,
  leader: SchedulerLeader,
  views: LateViews,
  logTo: Log
): Promise<KubernetesOperator> {
  const applied = (id: string) => {
    const live = views.liveDispatchers().find(d => d.id === id && d.alive)
    return live === undefined ? undefined : BigInt(live.contractOffset)
  }
  const operator = new KubernetesOperator({
    kube: new KubeApi(config),
    addresses: addressLookup(config),
    shoal: new ShoalApi({ url: server.url, ...server.peers }),
    claim: options.claim,
    leading: () => leader.term !== undefined,
    deliveryStopped: key => leader.term?.deliveryStopped(key, applied) ?? false,
    log: logTo
  })
  await operator.start()
  return operator
}

/** The API server, listening; it presents sources and dispatchers with what `views` know once they are wired. */
async function startServer(
  options: ControllerOptions,
  serviceUrlTemplate: string,
  views: LateViews,
  logTo: Log
): Promise<{ server: ApiServer; url: string; replicaId: string }> {
  const liveById = (name: string) => views.liveDispatchers().find(d => d.id === name)
  const server = new ApiServer({
    ...(options.host === undefined ? {} : { host: options.host }),
    ...(options.port === undefined ? {} : { port: options.port }),
    ...(options.guard === undefined ? {} : { guard: options.guard }),
    ...(options.tls === undefined ? {} : { tls: options.tls }),
    ...(options.secretKey === undefined ? {} : { secretKey: options.secretKey }),
    log: logTo,
    present: entry =>
      isSource(entry)
        ? presentSource(
            entry,
            serviceUrlTemplate,
            id => liveById(id)?.zone,
            views.lastDeliveryError(entry.key),
            views.flowOf(entry.key),
            id => originsOf(liveById(id))
          )
        : presentDispatcher(entry.object.metadata.name, entry, liveById(entry.object.metadata.name)),
    liveObjects: (info, stored) =>
      isDispatcherKind(info)
        ? views
            .liveDispatchers()
            .filter(d => !stored.has(d.id))
            .map(d => presentDispatcher(d.id, undefined, d))
        : [],
    liveObject: (info, name) => {
      const live = isDispatcherKind(info) ? liveById(name) : undefined
      return live && presentDispatcher(name, undefined, live)
    }
  })
  const url = await server.listen()
  const replicaId = options.replicaId ?? `${hostname()}-${new URL(url).port}`
  const templateProblem = checkServiceUrlTemplate(serviceUrlTemplate)
  if (templateProblem !== undefined) {
    await server.close()
    throw new ShoalError(ErrorCodes.USAGE, `--service-url-template: ${templateProblem}`)
  }
  return { server, url, replicaId }
}

/** Joins the store's group; a store that cannot open closes the server. */
async function openStore(
  options: ControllerOptions,
  server: ApiServer,
  replica: { replicaId: string; url: string; serviceUrlTemplate: string; logTo: Log }
): Promise<ResourceStore> {
  try {
    return await ResourceStore.open({
      connection: { brokers: options.brokers, clientId: `shoal-controller-${replica.replicaId}` },
      ...(options.prefix === undefined ? {} : { prefix: options.prefix }),
      ...(options.buckets === undefined ? {} : { buckets: options.buckets }),
      ...(options.sessionTimeoutMs === undefined ? {} : { sessionTimeoutMs: options.sessionTimeoutMs }),
      replicaId: replica.replicaId,
      url: replica.url,
      statusOf: (object, previous) =>
        !isSource(object)
          ? {}
          : sourceStatus(object, {
              serviceUrlTemplate: replica.serviceUrlTemplate,
              now: new Date(),
              previous: previous as SourceStatus | undefined
            }),
      finalize: withServerDefaults,
      log: replica.logTo
    })
  } catch (error) {
    await server.close()
    throw error
  }
}

/**
 * The parts the scheduler leader needs, started: the members follower and the delivery errors; then the leader,
 * not yet following the leadership. On failure everything started so far is closed.
 */
async function startLeading(
  options: ControllerOptions,
  store: ResourceStore,
  server: ApiServer,
  parts: {
    connection: KafkaConnection
    config: SchedulerConfig
    scaler: StatefulSetScaler | undefined
    views: LateViews
    logTo: Log
  }
): Promise<{ members: MembersFollower; deliveryErrors: DeliveryErrors; leader: SchedulerLeader }> {
  const { connection, views, logTo } = parts
  const members = new MembersFollower({
    connection,
    ...(options.prefix === undefined ? {} : { prefix: options.prefix }),
    ...(options.livenessTimeoutMs === undefined ? {} : { livenessTimeoutMs: options.livenessTimeoutMs }),
    log: logTo
  })
  const deliveryErrors = new DeliveryErrors(connection, store.names, (message, error) =>
    logTo('warn', message, { error: String(error) })
  )
  try {
    await deliveryErrors.start()
    views.lastDeliveryError = key => deliveryErrors.lastOf(key)
    await members.start()
    const pool = leaderPool(options, parts.scaler, logTo)
    const leader = new SchedulerLeader({
      connection,
      store,
      members,
      config: parts.config,
      log: logTo,
      // The leader reports its scheduling passes to /metrics, which starts after it.
      onPass: seconds => views.observePass(seconds),
      ...(options.secretKey === undefined ? {} : { secretKey: options.secretKey }),
      ...(pool === undefined ? {} : { pool })
    })
    return { members, deliveryErrors, leader }
  } catch (error) {
    await members.close().catch(() => undefined)
    await deliveryErrors.close().catch(() => undefined)
    await store.close()
    await server.close()
    throw error
  }
}

/** The pool the leader sizes (`--dispatchers`), told to write each decision to the StatefulSet when there is one. */
function leaderPool(
  options: ControllerOptions,
  scaler: StatefulSetScaler | undefined,
  logTo: Log
): PoolOptions | undefined {
  if (options.pool === undefined && scaler === undefined) return undefined
  return {
    bounds: options.pool?.bounds ?? { min: 0, max: MAX_POOL_SIZE },
    ...options.pool,
    ...(scaler === undefined
      ? {}
      : {
          onDecision: decision =>
            void scaler.apply(decision.replicas).catch(error => {
              logTo('warn', 'could not write the pool size to the StatefulSet', { error: String(error) })
            })
        })
  }
}

/** /metrics and the /ui dashboard, served on the API's port (docs/metrics.md, docs/ui.md). */
function serveObservability(
  options: ControllerOptions,
  server: ApiServer,
  store: ResourceStore,
  parts: {
    replicaId: string
    serviceUrlTemplate: string
    members: MembersFollower
    views: LateViews
    logTo: Log
  }
): ReturnType<typeof startObservability> {
  const { views, members } = parts
  const liveById = (name: string) => views.liveDispatchers().find(d => d.id === name)
  const observed = startObservability({
    replicaId: parts.replicaId,
    store,
    members: () => members.members(),
    present: entry =>
      presentSource(
        entry,
        parts.serviceUrlTemplate,
        id => liveById(id)?.zone,
        views.lastDeliveryError(entry.key),
        views.flowOf(entry.key),
        id => originsOf(liveById(id))
      ),
    log: parts.logTo,
    ...(options.secretKey === undefined ? {} : { secretKey: options.secretKey })
  })
  views.observePass = seconds => observed.observePass(seconds)
  server.mount((req, res, path) => observed.handle(req, res, path))
  // An event stream lasts as long as the page is open: no request latency.
  server.observe((method, path, status, seconds) => {
    if (path !== '/ui/events') observed.observeRequest(method, path, status, seconds)
  })
  return observed
}

function notLeading(): never {
  throw new ShoalError(ErrorCodes.UNAVAILABLE, 'this replica does not run the scheduler right now; retry', {
    retriable: true
  })
}

/** The sink origins a dispatcher's heartbeat reports, if it is alive (a dead one's figures stopped). */
function originsOf(live: LiveDispatcher | undefined): LiveDispatcher['origins'] {
  return live?.alive === true ? live.origins : undefined
}

function liveDispatcherOf(m: MemberStatus): LiveDispatcher {
  return {
    id: m.id,
    zone: m.zone,
    node: m.node,
    capacity: m.capacity,
    used: m.used,
    incarnation: m.incarnation,
    lastHeartbeat: new Date(m.lastSeen).toISOString(),
    contractOffset: m.contractOffset,
    ...(m.sinks === undefined ? {} : { sinks: m.sinks }),
    ...(m.origins === undefined ? {} : { origins: m.origins }),
    alive: m.state !== 'dead'
  }
}

/**
 * A replacement keeps the stored consumer group and may not change it (the store's writer then gives a new
 * KafkaSource without one Knative's `knative-kafka-source-<uid>`: see withStoredDefaults).
 */
function withServerDefaults(object: StoredObject, previous: StoredObject | undefined): StoredObject {
  if (!isKafkaSource(object)) return object
  // Autoscaling annotations are checked where every write passes, so a bad one is refused naming the annotation.
  const autoscale = autoscaleSetting(object.metadata.annotations)
  if (autoscale.kind === 'invalid') throw invalid(`KafkaSource ${object.metadata.name}`, autoscale.fields)
  return previous && isKafkaSource(previous) ? checkUpdate(previous, object) : object
}
