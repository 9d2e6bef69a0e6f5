// Consumer lag of a source's group: the one definition (lag.ts, pure) and the one reader that asks Kafka for it,
// used alike by /metrics, the autoscaler and `shoal offsets`.
export { lagBetween, lagFigures, ratesBetween } from './lag.ts'
export type { LagFigures, LagSample, PartitionFigures } from './lag.ts'
export { LagReader } from './lag-reader.ts'
export type { LagQuery, LagReading, LagSource, PartitionLag } from './lag-reader.ts'
