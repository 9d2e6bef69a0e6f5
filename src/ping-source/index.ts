export { CronTicks, CronTicksCache } from './cron-ticks.ts'
export {
  DEFAULT_LATE_POLICY,
  DEFAULT_MAX_LATE_TICKS,
  LATE_EXTENSION,
  LATE_POLICY_ANNOTATION,
  isLatePolicy,
  latePolicyOf,
  lateTicks
} from './late-policy.ts'
export type { LatePolicy } from './late-policy.ts'
export { PING_EVENT_TYPE, PingEventBuilder, pingEventSource, tickEventId } from './ping-event.ts'
export type { PingEventSource } from './ping-event.ts'
export { StringPool, pingRecordOf, pingTargetOf } from './ping-record.ts'
export type { PingRecord, PingRecordOptions, PingSink } from './ping-record.ts'
export { ScheduleTable } from './schedule-table.ts'
export type { Firing, ScheduleSpec, ScheduleTableOptions, Tick } from './schedule-table.ts'
export { MAX_OWED, endedHoldings, heartbeatWatermark, holdersOf, releaseSchedule } from './hand-over.ts'
export { TickHeap } from './tick-heap.ts'
export { DEFAULT_TICK_SLICE, TickFeeder } from './tick-feeder.ts'
export type { TickFeederOptions } from './tick-feeder.ts'
export { TickTimer } from './tick-timer.ts'
export type { TickTimerOptions } from './tick-timer.ts'
export { DEFAULT_MAX_EXCEPTIONS, MAX_NAMED, RELEASE_HOLD_MS, compactWatermark, readWatermark } from './watermark.ts'
export type { ReadWatermark } from './watermark.ts'
export { TickLedger } from './tick-ledger.ts'
export type { HeldRelease } from './tick-ledger.ts'
export { WatermarkBook } from './watermark-book.ts'
export type { Holder, Resolution, ResolvingSelf, WatermarkBookOptions } from './watermark-book.ts'
export { DEFAULT_RELEASE_MEMORY_AFTER, PingSourcePlane } from './ping-source-plane.ts'
export type { PingSourcePlaneOptions } from './ping-source-plane.ts'
export { HANDOVER_WAIT_MS, PreviousOwners } from './previous-owners.ts'
export type { PreviousOwnersOptions } from './previous-owners.ts'
