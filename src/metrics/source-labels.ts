// Label values for a source key (`Kind/namespace/name`): `source` is `namespace/name`, `kind` the resource kind.

/** The `source` label value of every source without a label of its own. */
export const OTHER_SOURCE = '_other'

/** The `source` and `kind` label values of one source. */
export interface SourceLabels {
  readonly source: string
  readonly kind: string
}

/** `KafkaSource/default/orders` → `{ source: 'default/orders', kind: 'KafkaSource' }`. */
export function sourceLabels(sourceKey: string): SourceLabels {
  const slash = sourceKey.indexOf('/')
  if (slash <= 0 || slash === sourceKey.length - 1) return { source: sourceKey, kind: 'unknown' }
  return { source: sourceKey.slice(slash + 1), kind: sourceKey.slice(0, slash) }
}

/** The labels a source's events are counted under when it has no label of its own. */
export function otherLabels(sourceKey: string): SourceLabels {
  return { source: OTHER_SOURCE, kind: sourceLabels(sourceKey).kind }
}
