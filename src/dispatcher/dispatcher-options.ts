import { ErrorCodes, ShoalError } from '../errors/index.ts'
import { DEFAULT_LIVENESS_TIMEOUT_MS, checkLivenessTimeout } from './liveness.ts'
import type { Log } from '../log/index.ts'

/** Schedule slots a dispatcher offers when not told: cron entries are light (one timer structure for all). */
export const DEFAULT_SCHEDULE_CAPACITY = 1000

export interface DispatcherOptions {
  readonly brokers: readonly string[]
  /** Stable identity, `dispatcher-<ordinal>`; a DNS label (no `/`). */
  readonly id: string
  readonly zone: string
  readonly node: string
  /** Consumer slots: how many KafkaSource vreplicas (consumer-group members) it runs at most. */
  readonly capacity: number
  /** Schedule slots: how many PingSource schedules it runs at most (default 1000). */
  readonly scheduleCapacity?: number
  readonly prefix?: string
  /** Partitions of the bucketed topics, used only if this process is the first and creates them (default 16). */
  readonly buckets?: number
  /** The dispatcher liveness timeout (default 10 s): heartbeats every tenth of it, self-fencing after half. */
  readonly livenessTimeoutMs?: number
  readonly log?: Log
  /** Abandons a start still waiting for Kafka. */
  readonly signal?: AbortSignal
}

/** A dispatcher id is a DNS label, like the StatefulSet pod names it comes from; never a `/` (contract keys). */
export const DISPATCHER_ID = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/

/** Throws a SHOAL_USAGE error naming every wrong option. */
export function checkOptions(options: DispatcherOptions): void {
  const problems: string[] = []
  if (!DISPATCHER_ID.test(options.id)) {
    problems.push(`id "${options.id}" must be a DNS label: lower-case letters, digits and '-', at most 63`)
  }
  if (options.zone.length === 0) problems.push('zone must not be empty')
  if (options.node.length === 0) problems.push('node must not be empty')
  if (!Number.isSafeInteger(options.capacity) || options.capacity < 0) {
    problems.push(`capacity must be an integer >= 0, not ${options.capacity}`)
  }
  const schedules = options.scheduleCapacity ?? DEFAULT_SCHEDULE_CAPACITY
  if (!Number.isSafeInteger(schedules) || schedules < 0) {
    problems.push(`schedule capacity must be an integer >= 0, not ${schedules}`)
  }
  try {
    checkLivenessTimeout(options.livenessTimeoutMs ?? DEFAULT_LIVENESS_TIMEOUT_MS)
  } catch (error) {
    problems.push((error as Error).message)
  }
  if (options.brokers.length === 0) problems.push('no broker address given')
  if (problems.length > 0) throw new ShoalError(ErrorCodes.USAGE, problems.join('; '))
}
