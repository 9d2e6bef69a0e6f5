import { ErrorCodes, ShoalError } from '../errors/index.ts'
import type { VPod } from './types.ts'

/** Throws one SHOAL_USAGE naming every problem of a source handed to the scheduler. */
export function checkVPod(vpod: VPod): void {
  const problems: string[] = []
  if (typeof vpod.key !== 'string' || vpod.key === '') problems.push('key must be a non-empty string')
  if (vpod.slot !== 'consumer' && vpod.slot !== 'schedule') problems.push('slot must be consumer or schedule')
  if (!Number.isSafeInteger(vpod.vreplicas) || vpod.vreplicas < 0)
    problems.push('vreplicas must be a non-negative integer')
  if (vpod.maxVReplicas !== undefined && (!Number.isSafeInteger(vpod.maxVReplicas) || vpod.maxVReplicas < 0)) {
    problems.push('maxVReplicas must be a non-negative integer')
  }
  if (problems.length > 0) throw new ShoalError(ErrorCodes.USAGE, `source ${String(vpod.key)}: ${problems.join('; ')}`)
}
