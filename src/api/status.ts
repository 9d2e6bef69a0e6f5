import { resolveDestination } from './destination.ts'
import { deepFreeze } from '../util/index.ts'
import type { Condition, SourceResource, SourceStatus } from './types.ts'

/** Condition types, with Knative's names. */
export const ConditionTypes = {
  Ready: 'Ready',
  SinkProvided: 'SinkProvided',
  Scheduled: 'Scheduled',
  InitialOffsetsCommitted: 'InitialOffsetsCommitted'
} as const

/**
 * The conditions `Ready` is the AND of, per kind (Knative's ConditionSet). To make Ready wait for a new
 * condition, add its type here and pass its observation to computeStatus.
 */
export const readyDependencies: Readonly<Record<SourceResource['kind'], readonly string[]>> = deepFreeze({
  KafkaSource: [ConditionTypes.SinkProvided, ConditionTypes.Scheduled, ConditionTypes.InitialOffsetsCommitted],
  PingSource: [ConditionTypes.SinkProvided, ConditionTypes.Scheduled]
})

/** A condition as another part of Shoal observed it (the scheduler's `Scheduled`, …), without its time. */
export interface ConditionObservation {
  readonly type: string
  readonly status: Condition['status']
  readonly reason?: string
  readonly message?: string
}

export interface ComputeStatusOptions {
  readonly serviceUrlTemplate: string
  readonly now: Date
  /** The status last written: a condition whose status did not change keeps its lastTransitionTime. */
  readonly previous?: SourceStatus | undefined
  /** Conditions observed elsewhere; those in readyDependencies feed Ready, a missing one is Unknown. */
  readonly observations?: readonly ConditionObservation[] | undefined
}

/**
 * The status of a resource: observedGeneration, the resolved sink and Knative's conditions, sorted by type
 * as Knative sorts them. Pure: the time comes from `options.now`.
 */
export function computeStatus(resource: SourceResource, options: ComputeStatusOptions): SourceStatus {
  const { metadata, spec } = resource
  const sink = resolveDestination(spec.sink, metadata.namespace, { serviceUrlTemplate: options.serviceUrlTemplate })
  const sinkProvided: ConditionObservation =
    sink.kind === 'resolved'
      ? { type: ConditionTypes.SinkProvided, status: 'True' }
      : { type: ConditionTypes.SinkProvided, status: 'False', reason: sink.reason, message: sink.message }

  const observed = new Map<string, ConditionObservation>()
  for (const observation of options.observations ?? []) {
    if (observation.type !== ConditionTypes.Ready) observed.set(observation.type, observation)
  }
  observed.set(sinkProvided.type, sinkProvided)
  for (const type of readyDependencies[resource.kind]) {
    if (!observed.has(type)) observed.set(type, { type, status: 'Unknown' })
  }
  observed.set(ConditionTypes.Ready, ready(readyDependencies[resource.kind].map(t => observed.get(t))))

  const now = rfc3339Seconds(options.now)
  const previous = new Map((options.previous?.conditions ?? []).map(c => [c.type, c]))
  const conditions = [...observed.values()]
    .sort((a, b) => (a.type < b.type ? -1 : a.type > b.type ? 1 : 0))
    .map((o): Condition => {
      const before = previous.get(o.type)
      const lastTransitionTime = before !== undefined && before.status === o.status ? before.lastTransitionTime : now
      return {
        type: o.type,
        status: o.status,
        ...(o.reason === undefined ? {} : { reason: o.reason }),
        ...(o.message === undefined ? {} : { message: o.message }),
        lastTransitionTime
      }
    })

  return deepFreeze({
    observedGeneration: metadata.generation ?? 0,
    ...(sink.kind === 'resolved' ? { sinkUri: sink.uri } : {}),
    ...(sink.kind === 'resolved' && spec.sink.CACerts !== undefined ? { sinkCACerts: spec.sink.CACerts } : {}),
    conditions
  })
}

/** Knative's rule: the first False dependency makes Ready False, else the first Unknown makes it Unknown. */
function ready(dependencies: readonly (ConditionObservation | undefined)[]): ConditionObservation {
  const present = dependencies.filter(d => d !== undefined)
  const blocker = present.find(d => d.status === 'False') ?? present.find(d => d.status === 'Unknown')
  if (blocker === undefined) return { type: ConditionTypes.Ready, status: 'True' }
  return {
    type: ConditionTypes.Ready,
    status: blocker.status,
    ...(blocker.reason === undefined ? {} : { reason: blocker.reason }),
    ...(blocker.message === undefined ? {} : { message: blocker.message })
  }
}

function rfc3339Seconds(date: Date): string {
  return date.toISOString().replace(/\.\d{3}Z$/, 'Z')
}
