export { defaultConsumerGroup } from './consumer-group.ts'
export { DEFAULT_SERVICE_URL_TEMPLATE, checkServiceUrlTemplate, resolveDestination } from './destination.ts'
export type { DestinationResolution, ResolveOptions } from './destination.ts'
export { parseIsoDuration } from './duration.ts'
export {
  DispatcherKind,
  KafkaSourceKind,
  PingSourceKind,
  SecretKind,
  apiVersionOf,
  atVersion,
  kindByApiVersion,
  kindByPath,
  kinds,
  lookupKind,
  resourceKey,
  servedApiVersions,
  sourceKinds,
  storageApiVersionOf
} from './kinds.ts'
export type { KindInfo } from './kinds.ts'
export { DEFAULT_MAX_MANIFEST_BYTES, parseManifests } from './manifests.ts'
export type { ParseManifestsOptions } from './manifests.ts'
export { parseSchedule } from './schedule.ts'
export { schemas } from './schemas.ts'
export type { Schema } from './schemas.ts'
export { ConditionTypes, computeStatus, readyDependencies } from './status.ts'
export type { ComputeStatusOptions, ConditionObservation } from './status.ts'
export { sourceStatus } from './source-status.ts'
export type {
  CloudEventOverrides,
  Condition,
  DeliverySpec,
  Destination,
  FlowControlRow,
  KReference,
  KafkaNetSpec,
  KafkaSASLSpec,
  KafkaSource,
  KafkaSourceSpec,
  KafkaTLSSpec,
  ObjectMeta,
  PingSource,
  PingSourceSpec,
  SecretKeySelector,
  SecretValueFromSource,
  SinkGateFigures,
  SinkOriginFigures,
  SinkOriginRow,
  SourceResource,
  SourceStatus
} from './types.ts'
export { checkUpdate } from './update.ts'
export { DEFAULT_NAMESPACE, validateResource } from './validate.ts'
export { DEFAULT_SCHEDULE, SPEC_DEFAULTS, withStoredDefaults } from './defaults.ts'
export type { Defaultable } from './defaults.ts'
export {
  formatRequirement,
  isLabelKey,
  isLabelValue,
  matchesSelector,
  parseSelector,
  serverSelector
} from './label-selector.ts'
export type { Requirement, SelectorParse } from './label-selector.ts'
export { dispatcherSchema, validateDispatcher } from './dispatcher.ts'
export type { DispatcherResource, DispatcherSpec } from './dispatcher.ts'
export { validateObject } from './validate-object.ts'
export type { ShoalResource } from './validate-object.ts'
export { MAX_SECRET_BYTES, secretSchema, validateSecret } from './secret.ts'
export type { Envelope, SealedSecretSpec, SecretResource } from './secret.ts'
export {
  CLOUD_EVENT_ATTRIBUTE_NAME,
  CLOUD_EVENT_CONTEXT_ATTRIBUTES,
  checkDns1123Label,
  checkDns1123Subdomain
} from './names.ts'
export { PAUSED_ANNOTATION, isPaused } from './paused.ts'
export { KAFKA_KEY_TYPES, KEY_TYPE_LABEL, keyTypeOf } from './key-type-label.ts'
export type { KafkaKeyType, KeyTypeSetting } from './key-type-label.ts'
export { BATCH_ANNOTATIONS, BATCH_DEFAULTS, batchAnnotationErrors, batchSettingsOf } from './batch-annotations.ts'
export type { BatchSettings } from './batch-annotations.ts'
export { FLOW_ANNOTATIONS, MAX_FLOW_CONCURRENCY, MAX_FLOW_RATE, parseFlowControl } from './flow-annotations.ts'
export type { FlowAnnotationError, FlowControlParse, FlowControlSpec } from './flow-annotations.ts'
export { OIDC_ANNOTATION, formatOidcAnnotation, oidcTokenKey, parseOidcAnnotation } from './oidc-annotation.ts'
export type { OidcAnnotationParse, OidcAudiences } from './oidc-annotation.ts'
