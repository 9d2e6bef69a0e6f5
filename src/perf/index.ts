export {
  CONSUME_DETAIL_HEADER,
  CONSUME_HEADER,
  consumePerf,
  formatConsumeInterval,
  formatConsumeTotal,
  formatTime
} from './consume.ts'
export type { ConsumeInterval, ConsumePerfOptions, ConsumePerfResult } from './consume.ts'
export { e2ePerf, readStamp } from './e2e.ts'
export type { E2ePerfOptions, E2ePerfResult } from './e2e.ts'
export { PERF_USAGE, parsePerfArgs } from './perf-args.ts'
export type { ConsumeArgs, E2eArgs, PerfArgs, ProduceArgs } from './perf-args.ts'
export { MB, PerfStats, formatTotal, formatWindow, parseTotal, percentile } from './perf-stats.ts'
export type { ParsedTotal, PerfSummary, Percentiles } from './perf-stats.ts'
export { perfOutput, renderBar } from './progress.ts'
export type { PerfOutput } from './progress.ts'
export { producePerf, stamped } from './produce.ts'
export type { Acks, ProducePerfOptions, ProducePerfResult } from './produce.ts'
export { throttleDelay } from './throttle.ts'
export { DEFAULT_PERF_PARTITIONS, ensurePerfTopic } from './topic.ts'
