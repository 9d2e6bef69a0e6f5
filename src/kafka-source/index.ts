export { SourceRunner } from './source-runner.ts'
export type { SourceRunnerCloseOptions, SourceRunnerOptions, SourceRunnerStatus } from './source-runner.ts'
export type { GroupMemberStatus, PartitionStatus } from './member-status.ts'
export { commitInitialOffsets } from './initial-offsets.ts'
export type { CommitInitialOffsetsOptions, InitialOffsetsResult } from './initial-offsets.ts'
export type { PartitionOffset } from './offset-committer.ts'
export {
  COMMIT_INTERVAL_MS,
  DEFAULT_DRAIN_MS,
  DEFAULT_MAX_IN_FLIGHT,
  MAX_UNCOMMITTED_PER_PARTITION
} from './defaults.ts'
export { InitialOffsets, Orderings } from './types.ts'
export { batchDelivery } from './batch-send.ts'
export type { BatchSend } from './batch-send.ts'
export type { BatchLimits, Batching, DeliverBatch } from './types.ts'
export type { Deliver, InitialOffset, ConsumerSpec, Ordering, Outcome, SourceObserver, SourceRecord } from './types.ts'
export type { HeaderBytes, KafkaHeaders, KafkaRecord } from './kafka-record.ts'
export {
  KAFKA_EVENT_TYPE,
  KAFKA_HEADER_PREFIX,
  KAFKA_OFFSET_EXTENSION,
  KAFKA_PARTITION_EXTENSION,
  headerExtensionName,
  kafkaEventSource,
  recordToEvent
} from './record-to-event.ts'
export type { MappingMode, MappingOptions, MappingResult, SourceRef } from './record-to-event.ts'
export { keyExtensionValue } from './record-key.ts'
export { javaDoubleToString, javaFloatToString } from './java-number.ts'
export { KafkaSourcePlane } from './kafka-source-plane.ts'
export type { KafkaSourceActivity, KafkaSourcePlaneOptions, OwnedPartitionLag } from './kafka-source-plane.ts'
export { parseResetTarget, readOffsets, resetOffsets } from './group-offsets.ts'
export type { OffsetsView, ResetTarget } from './group-offsets.ts'
export { isMemberOf, removeStaticMembers } from './static-members.ts'
export type { RemoveStaticMembersOptions } from './static-members.ts'
