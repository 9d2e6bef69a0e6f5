import { isPaused } from '../api/index.ts'
import { lagSourceOf } from '../autoscale/index.ts'
import type { Autoscaler, AutoscaleTarget } from '../autoscale/index.ts'
import type { VPod } from '../scheduler/index.ts'
import type { NetResolution } from '../secrets/index.ts'
import { isKafkaSource } from '../store/index.ts'
import type { ScaleRecord, StoredEntry, StoredKafkaSource } from '../store/index.ts'

/** Whether a store key names a source the leader schedules. */
export function isSourceKey(key: string): boolean {
  return key.startsWith('KafkaSource/') || key.startsWith('PingSource/')
}

/** A KafkaSource as the autoscaler reads it, with its resolved `spec.net` (or why it cannot be resolved). */
export function autoscaleTarget(entry: StoredEntry<StoredKafkaSource>, net: NetResolution): AutoscaleTarget {
  return {
    key: entry.key,
    annotations: entry.object.metadata.annotations,
    paused: isPaused(entry.object.metadata),
    ...lagSourceOf(entry, net)
  }
}

/** A paused source gets none; an autoscaled one what its autoscaler says; any other its spec's count. */
export function scaleOf(
  entry: StoredEntry,
  autoscaler: Pick<Autoscaler, 'scaleOf' | 'heldBecause'> | undefined,
  net: (entry: StoredEntry<StoredKafkaSource>) => NetResolution
): ScaleRecord {
  if (isPaused(entry.object.metadata)) return { desired: 0, by: 'paused' }
  if (!isKafkaSource(entry)) return { desired: 1, by: 'spec' }
  const autoscaled = autoscaler?.scaleOf(autoscaleTarget(entry, net(entry)))
  if (autoscaled === undefined) return { desired: entry.object.spec.consumers, by: 'spec' }
  const held = autoscaler?.heldBecause(entry.key)
  return { desired: autoscaled, by: 'autoscaler', ...(held === undefined ? {} : { held }) }
}

/** A source as the scheduler places it: a KafkaSource takes consumer slots, at most one per partition. */
export function vpodOf(entry: StoredEntry, scale: ScaleRecord, maxVReplicas: number | undefined): VPod {
  if (!isKafkaSource(entry)) return { key: entry.key, slot: 'schedule', vreplicas: scale.desired }
  return {
    key: entry.key,
    slot: 'consumer',
    vreplicas: scale.desired,
    ...(maxVReplicas === undefined ? {} : { maxVReplicas })
  }
}
