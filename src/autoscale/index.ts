export {
  AUTOSCALE_DEFAULTS,
  Annotations,
  KEDA_CLASS,
  LegacyAnnotations,
  autoscaleSetting,
  seconds
} from './annotations.ts'
export type { AutoscaleConfig, AutoscaleSetting } from './annotations.ts'
export { decide, initialState } from './decide.ts'
export type { Decision, LagObservation, ScaleReason, ScaleState } from './decide.ts'
export { LagReader } from './lag-reader.ts'
export type { LagQuery, LagReading, PartitionLag } from './lag-reader.ts'
export { Autoscaler } from './autoscaler.ts'
export type { AutoscaleStatus, AutoscaleTarget, AutoscalerOptions } from './autoscaler.ts'
export { PAUSED_ANNOTATION, isPaused } from './pause.ts'
export { parseResetTarget, readOffsets, resetOffsets } from './source-offsets.ts'
export type { OffsetsView, ResetTarget } from './source-offsets.ts'
