export { CONTEXT_ATTRIBUTES } from './cloud-event.ts'
export type { CloudEvent, CloudEventAttributes } from './cloud-event.ts'
export { binaryHeaders, percentEncode } from './http-binary.ts'
export type { HeaderBytes, KafkaHeaders, KafkaRecord } from './kafka-record.ts'
export {
  KAFKA_EVENT_TYPE,
  KAFKA_HEADER_PREFIX,
  headerExtensionName,
  kafkaEventSource,
  recordToEvent
} from './record-to-event.ts'
export type { MappingMode, MappingOptions, MappingResult, SourceRef } from './record-to-event.ts'
