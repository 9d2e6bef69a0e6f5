export { MAX_TIMER_MS, backoffDelay, backoffSchedule } from './backoff.ts'
export type { BackoffPolicy } from './backoff.ts'
export { TRACE_EXTENSIONS } from './cloud-event.ts'
export type { CloudEvent, CloudEventAttributes } from './cloud-event.ts'
export { ERROR_DATA_LIMIT, deadLetterEvent } from './dead-letter.ts'
export type { DeliveryFailure } from './dead-letter.ts'
export { DEAD_LETTER_MIN_BACKOFF_MS, DELIVERER_DEFAULTS, Deliverer } from './deliverer.ts'
export type { DelivererOptions } from './deliverer.ts'
export { BATCH_CONTENT_TYPE, eventBatch, isBatch, structuredJson } from './event-batch.ts'
export type { EventBatch } from './event-batch.ts'
export { DeliveryCounters } from './delivery-observer.ts'
export type {
  AttemptClass,
  AttemptInfo,
  DeliveryObserver,
  Endpoint,
  OutcomeInfo,
  RetryInfo,
  SourceCounts
} from './delivery-observer.ts'
export type { DeliveryOutcome } from './delivery-outcome.ts'
export { DELIVERY_DEFAULTS, deliveryTargetFor, oidcTokenRef, resolveDeliveryPolicy } from './delivery-policy.ts'
export type { DeliveryPolicy, DeliveryTarget, OidcTokenRef, SinkEndpoint, TargetResolution } from './delivery-policy.ts'
export { binaryHeaders, percentEncode } from './http-binary.ts'
export { classifyStatus, statusClass } from './retriable.ts'
export type { StatusVerdict } from './retriable.ts'
export { honoursRetryAfter, parseRetryAfter, retryWait } from './retry-after.ts'
export type { SinkFlowState } from './sink-gate.ts'
export type { OidcTokenLookup, OriginFigures } from './sink-client.ts'
export { DEFAULT_FORBIDDEN_CIDRS, SinkPolicy, parseCidrList } from './sink-policy.ts'
export type { SinkPolicyOptions } from './sink-policy.ts'
