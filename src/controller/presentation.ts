import { DispatcherKind, apiVersionOf, resolveDestination, sourceStatus } from '../api/index.ts'
import type { ConditionObservation, FlowControlRow, KindInfo, SinkOriginFigures, SourceStatus } from '../api/index.ts'
import { isDispatcher, isKafkaSource } from '../store/index.ts'
import type { DeliveryErrorRecord, MemberRecord, PlacementsRecord, StoredEntry, StoredSource } from '../store/index.ts'
import { placedFlowRows } from './sink-flow.ts'
import { originsOf, sinkOriginRows } from './sink-origins.ts'

/** A dispatcher as its heartbeats show it: the heartbeat's own fields, when the last one came, and whether it lives. */
export interface LiveDispatcher extends Pick<
  MemberRecord,
  'id' | 'zone' | 'node' | 'capacity' | 'used' | 'incarnation' | 'contractOffset' | 'sinks' | 'origins'
> {
  /** Broker time of its last heartbeat, ISO-8601. */
  readonly lastHeartbeat: string
  /** False once its heartbeats stopped for longer than the liveness timeout. */
  readonly alive: boolean
}

/** The Scheduled condition, as the scheduler leader's placements record says. */
export function scheduledObservation(scheduling: PlacementsRecord | undefined, desired: number): ConditionObservation {
  if (scheduling === undefined) {
    return {
      type: 'Scheduled',
      status: 'Unknown',
      reason: 'Scheduling',
      message: 'waiting for the scheduler to place it'
    }
  }
  if (scheduling.pending > 0) {
    const total = scheduling.pending + scheduling.placements.reduce((n, p) => n + p.vreplicas, 0)
    return {
      type: 'Scheduled',
      status: 'False',
      reason: scheduling.reason ?? 'InsufficientCapacity',
      message: scheduling.message ?? `${scheduling.pending} of ${Math.max(total, desired)} vreplicas pending`
    }
  }
  return { type: 'Scheduled', status: 'True' }
}

/**
 * A source as the API shows it: its stored status with the scheduler's view merged in — the Scheduled
 * condition (and so Ready) and `status.placements`, Knative's field — computed when read, so it is never
 * staler than the placements record itself; and Shoal's `status.flowControl`: the live per-sink flow control of
 * the dispatchers it is placed on (`flow`, from their heartbeats), when it set the flow control annotations; and
 * Shoal's `status.sinkOrigins`: those dispatchers' connections to its sink's and dead letter sink's origins
 * (`originsOn` a dispatcher, from its heartbeats; undefined for one not alive).
 */
export function presentSource(
  entry: StoredEntry<StoredSource>,
  serviceUrlTemplate: string,
  zoneOf: (dispatcher: string) => string | undefined = () => undefined,
  lastError?: DeliveryErrorRecord,
  flow: readonly FlowControlRow[] = [],
  originsOn: (dispatcher: string) => readonly SinkOriginFigures[] | undefined = () => undefined
): unknown {
  const resource = entry.object
  const scale = entry.scheduling?.scale
  const desired = scale?.desired ?? (isKafkaSource(resource) ? resource.spec.consumers : 1)
  const stored = entry.status as SourceStatus | undefined
  const status = sourceStatus(resource, {
    serviceUrlTemplate,
    now: new Date(entry.scheduling?.since ?? entry.object.metadata.creationTimestamp),
    previous: stored,
    observed: [scheduledObservation(entry.scheduling, desired), ...scaleObservations(scale)]
  })
  const placed = (entry.scheduling?.placements ?? []).reduce((n, p) => n + p.vreplicas, 0)
  // Knative's status.consumers is the consumers actually scheduled; desiredConsumers says what was asked, and by whom.
  const counts =
    resource.kind === 'KafkaSource'
      ? { consumers: placed, desiredConsumers: desired, ...(scale ? { scaledBy: scale.by } : {}) }
      : {}
  const error = lastError
    ? { lastDeliveryError: { time: lastError.time, message: lastError.message, dispatcher: lastError.dispatcher } }
    : {}
  // Knative's placements are {podName, vreplicas}; the zone is added so `shoal describe` shows the spread.
  const placements = (entry.scheduling?.placements ?? []).map(p => {
    const zone = zoneOf(p.podName)
    return zone === undefined ? p : { ...p, zone }
  })
  const flowControl = placedFlowRows(flow, placements)
  const deadLetterSink = isKafkaSource(resource) ? resource.spec.delivery?.deadLetterSink : undefined
  const deadLetter =
    deadLetterSink && resolveDestination(deadLetterSink, resource.metadata.namespace, { serviceUrlTemplate })
  const sinkOrigins = sinkOriginRows(
    placements,
    originsOn,
    originsOf([status.sinkUri, deadLetter?.kind === 'resolved' ? deadLetter.uri : undefined])
  )
  return {
    ...entry.object,
    status: {
      ...status,
      ...counts,
      ...error,
      ...(placements.length > 0 ? { placements } : {}),
      ...(flowControl.length > 0 ? { flowControl } : {}),
      ...(sinkOrigins.length > 0 ? { sinkOrigins } : {})
    }
  }
}

/** `Autoscaled` (False while the lag cannot be read and the scale holds) and `Paused`, from the placements record. */
function scaleObservations(scale: PlacementsRecord['scale']): ConditionObservation[] {
  if (scale?.by === 'paused') {
    return [{ type: 'Paused', status: 'True', reason: 'Paused', message: 'shoal resume to deliver again' }]
  }
  if (scale?.by !== 'autoscaler') return []
  if (scale.held !== undefined) {
    return [
      {
        type: 'Autoscaled',
        status: 'False',
        reason: 'LagUnavailable',
        message: `the scale holds at ${scale.desired}: ${scale.held}`
      }
    ]
  }
  return [{ type: 'Autoscaled', status: 'True' }]
}

/** A Dispatcher: its desired state (cordoned), if stored, with its live state from heartbeats. */
export function presentDispatcher(
  name: string,
  entry: StoredEntry | undefined,
  live: LiveDispatcher | undefined
): unknown {
  const unschedulable = entry !== undefined && isDispatcher(entry) && entry.object.spec.unschedulable
  const state = live === undefined || !live.alive ? 'Dead' : unschedulable ? 'Cordoned' : 'Ready'
  return {
    apiVersion: apiVersionOf(DispatcherKind),
    kind: DispatcherKind.kind,
    metadata: entry?.object.metadata ?? { name },
    spec: { unschedulable },
    status: {
      state,
      ...(live
        ? {
            zone: live.zone,
            node: live.node,
            capacity: live.capacity,
            used: live.used,
            incarnation: live.incarnation,
            lastHeartbeat: live.lastHeartbeat,
            contractOffset: live.contractOffset
          }
        : {})
    }
  }
}

export function isDispatcherKind(info: KindInfo): boolean {
  return info.kind === DispatcherKind.kind
}
