import { resolveDestination } from '../api/index.ts'
import type { Destination, ShoalResource, SourceResource } from '../api/index.ts'
import type { SinkPolicy } from '../delivery/index.ts'
import type { FieldError } from '../errors/index.ts'

// What a source may name in multi-tenant mode (docs/security.md): not Shoal's internal topics, not Kafka's,
// not a consumer group outside its namespace's, and no sink that the sink policy forbids.

export interface TenantRulesContext {
  /** The installation's prefix: its topics are `<prefix>.…`, its groups and transactional ids `<prefix>-…`. */
  readonly prefix: string
  /** The namespaces of the caller; undefined for an admin, whose topics and groups are not restricted. */
  readonly namespaces: ReadonlySet<string> | undefined
  /** The consumer group stored for this source, if it exists: keeping it is always allowed. */
  readonly storedGroup: string | undefined
  readonly sinkPolicy: SinkPolicy
  readonly serviceUrlTemplate: string
}

/** The consumer-group rule: in multi-tenant mode a group a source names must start with this. */
export function groupPrefixOf(namespace: string): string {
  return `${namespace}.`
}

/** Every field of `object` the rules refuse, with why; empty when it may be stored. */
export function tenantRuleErrors(object: ShoalResource, context: TenantRulesContext): FieldError[] {
  if (object.kind !== 'KafkaSource' && object.kind !== 'PingSource') return []
  const errors: FieldError[] = []
  const namespace = object.metadata.namespace
  const kafka = object.kind === 'KafkaSource' ? object.spec : undefined
  if (context.namespaces !== undefined) {
    const internalTopic = `${context.prefix}.`
    ;(kafka?.topics ?? []).forEach((topic, i) => {
      if (topic.startsWith(internalTopic)) {
        errors.push({ path: `spec.topics[${i}]`, message: `"${topic}" is one of Shoal's internal topics` })
      } else if (topic.startsWith('__')) {
        errors.push({ path: `spec.topics[${i}]`, message: `"${topic}" is one of Kafka's internal topics` })
      }
    })
    const group = kafka?.consumerGroup
    if (group !== undefined && group !== context.storedGroup && !group.startsWith(groupPrefixOf(namespace))) {
      errors.push({
        path: 'spec.consumerGroup',
        message:
          `in multi-tenant mode a consumer group must start with "${groupPrefixOf(namespace)}" ` +
          `(or leave it out: Shoal then uses knative-kafka-source-<uid>)`
      })
    }
    for (const [path, destination] of destinations(object)) {
      const refNamespace = destination.ref?.namespace
      if (refNamespace !== undefined && !context.namespaces.has(refNamespace)) {
        errors.push({
          path: `${path}.ref.namespace`,
          message: `"${refNamespace}" is not a namespace this token may use`
        })
      }
    }
  }
  for (const [path, destination] of destinations(object)) {
    const resolved = resolveDestination(destination, namespace, { serviceUrlTemplate: context.serviceUrlTemplate })
    if (resolved.kind !== 'resolved') continue
    const reason = context.sinkPolicy.checkUrl(resolved.uri)
    if (reason !== undefined) {
      errors.push({ path: destination.ref === undefined ? `${path}.uri` : path, message: `refused: ${reason}` })
    }
  }
  return errors
}

/** A source's sink and, for a KafkaSource, its dead letter sink, with their paths. */
function destinations(source: SourceResource): Array<[string, Destination]> {
  const found: Array<[string, Destination]> = [['spec.sink', source.spec.sink]]
  const deadLetterSink = source.kind === 'KafkaSource' ? source.spec.delivery?.deadLetterSink : undefined
  if (deadLetterSink !== undefined) found.push(['spec.delivery.deadLetterSink', deadLetterSink])
  return found
}
