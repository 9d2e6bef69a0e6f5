/**
 * The consumer group of a KafkaSource that names none: Knative's `knative-kafka-source-<uid>`. The uid is
 * server-set, so the server fills spec.consumerGroup in when it first stores the source, and the group then
 * never changes (a new group would start again from initialOffset).
 */
export function defaultConsumerGroup(uid: string): string {
  return `knative-kafka-source-${uid}`
}
