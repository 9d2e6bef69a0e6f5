import { defaultConsumerGroup } from './consumer-group.ts'

/** Knative's PingSource schedule when none is given: every minute. */
export const DEFAULT_SCHEDULE = '* * * * *'

/**
 * The spec fields each kind may omit and the value an omitted one takes: written once, applied by
 * validateResource on the way in and by withStoredDefaults on every object the store holds.
 */
export const SPEC_DEFAULTS: Readonly<Record<string, Readonly<Record<string, unknown>>>> = Object.freeze({
  KafkaSource: Object.freeze({ consumers: 1, initialOffset: 'latest', ordering: 'ordered' }),
  PingSource: Object.freeze({ schedule: DEFAULT_SCHEDULE }),
  Dispatcher: Object.freeze({ unschedulable: false })
})

/** The least a stored object holds for its defaults to be applied: its kind, its server-set uid and its spec. */
export interface Defaultable {
  readonly kind: string
  readonly metadata: { readonly uid: string }
  readonly spec: unknown
}

/**
 * The one defaulting of an object as the store holds it: the spec defaults of its kind, and a KafkaSource's
 * consumer group, which needs the server-set uid (see defaultConsumerGroup). The store's writer applies it when
 * a resource is first written, and every reader of the store's log applies it again, so that a record written
 * without a field (by an older version, or straight to the store) reads as the API would have stored it.
 * Returns `object` itself when nothing is missing.
 */
export function withStoredDefaults<O extends Defaultable>(object: O): O {
  const spec = object.spec
  if (typeof spec !== 'object' || spec === null || Array.isArray(spec)) return object
  const given = spec as Readonly<Record<string, unknown>>
  const missing: Record<string, unknown> = {}
  for (const [field, value] of Object.entries(SPEC_DEFAULTS[object.kind] ?? {})) {
    if (given[field] === undefined) missing[field] = value
  }
  if (object.kind === 'KafkaSource' && (given['consumerGroup'] === undefined || given['consumerGroup'] === '')) {
    missing['consumerGroup'] = defaultConsumerGroup(object.metadata.uid)
  }
  if (Object.keys(missing).length === 0) return object
  return { ...object, spec: { ...given, ...missing } }
}
