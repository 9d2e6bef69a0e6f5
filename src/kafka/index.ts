export { KafkaAdmin, KafkaConsumer, KafkaProducer, brokerHealth } from './clients.ts'
export { LogTailer } from './log-tailer.ts'
export { fetchOrder, readCommitted } from './read-committed.ts'
export { fetchResponseOf } from './fetch-response.ts'
export type {
  AbortedTransaction,
  CommittedRecordVisitor,
  FetchLimits,
  FetchedBatch,
  FetchedRecord
} from './read-committed.ts'
export type { LogRecord, LogTailerOptions } from './log-tailer.ts'
export {
  GROUP_HEARTBEAT_INTERVAL_MS,
  GROUP_REBALANCE_TIMEOUT_MS,
  GROUP_SESSION_TIMEOUT_MS,
  IsolationLevels,
  KafkaTimeouts,
  kafkaClientOptions,
  kafkaConnectionTimeouts,
  parseBootstrap
} from './client-options.ts'
export type { KafkaClientKind, KafkaConnection } from './client-options.ts'
export { ensureTopics } from './topics.ts'
export type { TopicSpec } from './topics.ts'
export { topicPartitions } from './topic-partitions.ts'
export {
  SaslMechanisms,
  clusterKey,
  kafkaErrorMessage,
  kafkaSecurityOptions,
  securityFingerprint
} from './client-security.ts'
export type { KafkaClientSecurity, KafkaSecurityOptions, SaslMechanism } from './client-security.ts'
export { readBrokerSettings, unsafeBrokerSettings } from './broker-settings.ts'
export type { HeartbeatTimings } from './broker-settings.ts'
export type { UnsafeBrokerSetting } from './broker-settings.ts'
