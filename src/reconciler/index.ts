/**
 * The source reconciler every control-plane replica runs over the buckets it owns: it commits a KafkaSource's
 * initial offsets and records the outcome as the InitialOffsetsCommitted condition.
 */
export { SourceReconciler } from './source-reconciler.ts'
export type { SourceReconcilerOptions } from './source-reconciler.ts'
