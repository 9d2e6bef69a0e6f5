import { invalid } from '../errors/index.ts'
import { deepFreeze } from '../util/index.ts'
import type { SourceResource } from './types.ts'

/**
 * Checks a validated replacement against the stored resource, as Knative does on update: a KafkaSource's
 * consumerGroup may not change (a new group would start again from initialOffset). A replacement that
 * omits consumerGroup keeps the stored one. Returns the resource to store, frozen.
 */
export function checkUpdate<S extends SourceResource>(previous: SourceResource, next: S): S {
  const source: SourceResource = next
  if (previous.kind !== 'KafkaSource' || source.kind !== 'KafkaSource') return next
  const before = previous.spec.consumerGroup
  const after = source.spec.consumerGroup
  if (before === undefined || after === before) return next
  // `next` with only its spec's consumer group set: still an S (a KafkaSource of the same shape).
  if (after === undefined) return deepFreeze({ ...next, spec: { ...source.spec, consumerGroup: before } })
  const what = `KafkaSource ${next.metadata.namespace}/${next.metadata.name}`
  throw invalid(what, [
    {
      path: 'spec.consumerGroup',
      message: `is immutable: it is ${JSON.stringify(before)}; delete and recreate the source to change it`
    }
  ])
}
