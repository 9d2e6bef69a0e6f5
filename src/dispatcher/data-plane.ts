import type { DeliveryObserver, OriginFigures, SinkFlowState, SinkPolicy } from '../delivery/index.ts'
import { PingSourcePlane } from '../ping-source/index.ts'
import type { PingSourcePlaneOptions } from '../ping-source/index.ts'
import { SharedPlaneServices } from '../plane/index.ts'
import type { PlaneActivity, PlaneHost, SourcePlane } from '../plane/index.ts'
import { KafkaSourcePlane } from '../kafka-source/index.ts'
import type { KafkaSourcePlaneOptions, SourceObserver } from '../kafka-source/index.ts'
import type { RunningDispatcher } from './dispatcher.ts'
import { fencedDrainOf } from './liveness.ts'
import type { Log } from '../log/index.ts'
import { closeInOrder } from '../util/index.ts'
import { originReportsOf, sinkReportsOf } from './sink-reports.ts'

/** What the planes of a dispatcher are built from, beside the dispatcher itself. */
export interface DataPlaneOptions {
  /** How a Service a sink names becomes a URL (`{namespace}`, `{name}`). */
  readonly serviceUrlTemplate: string
  readonly log: Log
  /** Requests on the wire per sink origin, across every kind (DELIVERER_DEFAULTS when absent). */
  readonly maxConnectionsPerOrigin?: number
  /** Refuses sinks at forbidden addresses when connecting (multi-tenant installations; docs/security.md). */
  readonly sinkPolicy?: SinkPolicy
  /** Sees every delivery and every KafkaSource record (metrics). */
  readonly observer?: DeliveryObserver & SourceObserver
  readonly kafkaSource?: KafkaSourcePlaneOptions
  readonly pingSource?: PingSourcePlaneOptions
}

/** The source kinds a dispatcher runs, each a plane over the shared services: a new kind is one more line. */
function planesFor(host: PlaneHost, options: DataPlaneOptions): SourcePlane[] {
  const observer = options.observer === undefined ? {} : { observer: options.observer }
  return [
    new KafkaSourcePlane(host, { ...options.kafkaSource, ...observer }),
    new PingSourcePlane(host, options.pingSource)
  ]
}

/** The planes of a running dispatcher over the services it owns and shares with them. */
export interface DataPlane {
  readonly planes: readonly SourcePlane[]
  /** Every plane's sources, for the dispatcher's metrics (DispatcherMetrics.track). */
  status(): PlaneActivity[]
  /** The per-sink flow control of its deliverer, for the dispatcher's metrics (DispatcherMetrics.trackSinks). */
  flow(): SinkFlowState[]
  /** Its deliverer's connections to each sink origin, for the dispatcher's metrics (DispatcherMetrics.trackOrigins). */
  sinks(): OriginFigures[]
  /** Drains and stops every plane, then the shared services. Close it before the dispatcher. */
  close(): Promise<void>
}

/**
 * Starts the data plane of a running dispatcher: the shared services (one Deliverer, the delivery-error
 * reporter, one reader of the resources topic), a plane for each source kind, each kept in step with the
 * dispatcher's contract and fencing; a plane's watermark and the deliverer's flow control go into every heartbeat.
 */
export async function startDataPlane(
  dispatcher: RunningDispatcher,
  store: { readonly brokers: readonly string[]; readonly prefix?: string | undefined },
  options: DataPlaneOptions
): Promise<DataPlane> {
  const { brokers, prefix } = store
  const services = new SharedPlaneServices({
    brokers,
    ...(prefix === undefined ? {} : { prefix }),
    dispatcherId: dispatcher.id,
    ...(options.maxConnectionsPerOrigin === undefined
      ? {}
      : { maxConnectionsPerOrigin: options.maxConnectionsPerOrigin }),
    ...(options.sinkPolicy === undefined ? {} : { sinkPolicy: options.sinkPolicy }),
    ...(options.observer === undefined ? {} : { observer: options.observer }),
    ...(options.kafkaSource?.secretKey === undefined ? {} : { secretKey: options.kafkaSource.secretKey }),
    log: options.log
  })
  const host: PlaneHost = {
    dispatcherId: dispatcher.id,
    incarnation: dispatcher.incarnation,
    livenessTimeoutMs: dispatcher.livenessTimeoutMs,
    brokers,
    ...(prefix === undefined ? {} : { prefix }),
    serviceUrlTemplate: options.serviceUrlTemplate,
    services,
    log: options.log,
    heartbeatSoon: () => dispatcher.heartbeatSoon()
  }
  const planes = planesFor(host, options)
  try {
    await services.start()
    await Promise.all(planes.map(plane => plane.start()))
  } catch (error) {
    await Promise.all(planes.map(plane => plane.close().catch(() => undefined)))
    await services.close().catch(() => undefined)
    throw error
  }
  const apply = () => applyContract(dispatcher, planes)
  dispatcher.on('contract', apply)
  dispatcher.on('fenced', apply)
  dispatcher.on('unfenced', apply)
  const marking = planes.find(plane => plane.watermark !== undefined)
  if (marking !== undefined) dispatcher.reportWatermark(() => marking.watermark?.())
  dispatcher.reportSinks(() => sinkReportsOf(services.deliverer.flow()))
  dispatcher.reportOrigins(() => originReportsOf(services.deliverer.sinks()))
  apply()
  return {
    planes,
    status: () => planes.flatMap(plane => plane.activity?.() ?? []),
    flow: () => services.deliverer.flow(),
    sinks: () => services.deliverer.sinks(),
    async close() {
      dispatcher.off('contract', apply)
      dispatcher.off('fenced', apply)
      dispatcher.off('unfenced', apply)
      await closePlanes(planes, services)
    }
  }
}

/**
 * Closes every plane, the last kind first, then the shared services they use: each drains before the next
 * stops, and one whose close fails keeps none of the others open (the first failure is rethrown at the end).
 */
export function closePlanes(
  planes: readonly SourcePlane[],
  services: { readonly close: () => Promise<void> }
): Promise<void> {
  return closeInOrder([...[...planes].reverse().map(plane => () => plane.close()), () => services.close()])
}

/** Hands each plane the placements of its kind, and the ones of its kind that went. */
function applyContract(dispatcher: RunningDispatcher, planes: readonly SourcePlane[]): void {
  const ended = dispatcher.takeEndedHoldings()
  for (const plane of planes) {
    const prefix = `${plane.kind}/`
    plane.apply({
      contract: new Map([...dispatcher.contract].filter(([key]) => key.startsWith(prefix))),
      running: dispatcher.running,
      ...(dispatcher.fenced ? { drainMs: fencedDrainOf(dispatcher.livenessTimeoutMs) } : {}),
      contractOffset: dispatcher.contractOffset,
      ended: ended.filter(holding => holding.source.startsWith(prefix))
    })
  }
}
