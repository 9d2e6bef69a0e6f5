import { computeStatus } from './status.ts'
import type { ConditionObservation } from './status.ts'
import type { SourceResource, SourceStatus } from './types.ts'

/** Conditions computed on every status write or read, not observed by a reconciler. */
const COMPUTED_CONDITIONS = new Set(['Ready', 'SinkProvided', 'Scheduled'])

/** The conditions reconcilers observed (InitialOffsetsCommitted, …), to carry into a recomputed status. */
function carriedObservations(status: SourceStatus | undefined): ConditionObservation[] {
  return (status?.conditions ?? [])
    .filter(c => !COMPUTED_CONDITIONS.has(c.type))
    .map(c => ({
      type: c.type,
      status: c.status,
      ...(c.reason === undefined ? {} : { reason: c.reason }),
      ...(c.message === undefined ? {} : { message: c.message })
    }))
}

/**
 * A source's status recomputed from its spec: what reconcilers observed before (in `previous`) stands, and
 * `observed` adds or replaces conditions by type. The one place status is computed, for writes and reads.
 */
export function sourceStatus(
  resource: SourceResource,
  options: {
    readonly serviceUrlTemplate: string
    readonly now: Date
    readonly previous: SourceStatus | undefined
    readonly observed?: readonly ConditionObservation[]
  }
): SourceStatus {
  const observed = options.observed ?? []
  const replaced = new Set(observed.map(o => o.type))
  return computeStatus(resource, {
    serviceUrlTemplate: options.serviceUrlTemplate,
    now: options.now,
    previous: options.previous,
    observations: [...carriedObservations(options.previous).filter(o => !replaced.has(o.type)), ...observed]
  })
}
