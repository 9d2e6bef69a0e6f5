export { ResourceStore, DEFAULT_BUCKETS, storeTopics } from './resource-store.ts'
export type { ForwardWrite, ResourceStoreOptions } from './resource-store.ts'
export { storeNames, DEFAULT_PREFIX } from './names.ts'
export type { Assignment } from './membership.ts'
export type { StoreNames } from './names.ts'
export { bucketOf } from './bucket-of.ts'
export { contractPartitionOf } from './contract-partition.ts'
export { BucketWriter, isFencing } from './bucket-writer.ts'
export type { Finalize, StatusOf } from './bucket-writer.ts'
export type {
  BucketOwner,
  ControllerRecord,
  NewMetadata,
  StoredDispatcher,
  StoredEntry,
  StoredKafkaSource,
  StoredKafkaSourceSpec,
  StoredMetadata,
  StoredObject,
  StoredPingSource,
  StoredSecret,
  StoredSource,
  WriteOp,
  WriteResult
} from './types.ts'
export { isDispatcher, isKafkaSource, isPingSource, isSealedSecret, isSource, storedObjectOf } from './stored-kinds.ts'
export { MAX_ORIGIN_REPORTS, MAX_SINK_REPORTS, contractKey, ordinalOf } from './records.ts'
export type {
  ContractRecord,
  DeliveryErrorRecord,
  MemberRecord,
  MovedFrom,
  PlacementsRecord,
  Release,
  ScaleRecord,
  ScheduleWatermark,
  SinkFlowReport,
  SlotKind
} from './records.ts'
export { decodeValue, encodeValue, schemaHeaders } from './codec.ts'
export { INCARNATION_HEADER, memberUpdateOf } from './member-update.ts'
export type { MemberUpdate } from './member-update.ts'
export { appendInTransaction } from './append.ts'
export type { LogAppend } from './append.ts'
