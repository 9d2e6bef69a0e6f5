import { invalid } from '../errors/index.ts'
import { deepFreeze } from '../util/index.ts'
import type { SourceResource } from './types.ts'

/**
 * Checks a validated replacement against the stored resource, as Knative does on update: a KafkaSource's
 * consumerGroup may not change (a new group would start again from initialOffset). A replacement that
 * omits consumerGroup keeps the stored one. Returns the resource to store, frozen.
 */
export function checkUpdate(previous: SourceResource, next: SourceResource): SourceResource {
  if (previous.kind !== 'KafkaSource' || next.kind !== 'KafkaSource') return next
  const before = previous.spec.consumerGroup
  const after = next.spec.consumerGroup
  if (before === undefined || after === before) return next
  if (after === undefined) return deepFreeze({ ...next, spec: { ...next.spec, consumerGroup: before } })
  const what = `KafkaSource ${next.metadata.namespace}/${next.metadata.name}`
  throw invalid(what, [
    {
      path: 'spec.consumerGroup',
      message: `is immutable: it is ${JSON.stringify(before)}; delete and recreate the source to change it`
    }
  ])
}
