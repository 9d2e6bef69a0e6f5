export { DispatcherMetrics } from './dispatcher-metrics.ts'
export type { DispatcherMetricsOptions, DispatcherView, HealthReport, Slot, SourcesView } from './dispatcher-metrics.ts'
export { startMetricsServer } from './metrics-server.ts'
export type { MetricsServer, MetricsServerOptions, MetricsSource } from './metrics-server.ts'
export { rankSources } from './rank-sources.ts'
export { OTHER_SOURCE, otherLabels, sourceLabels } from './source-labels.ts'
export type { SourceLabels } from './source-labels.ts'
export {
  DEFAULT_MAX_SOURCE_LABELS,
  DEFAULT_RANK_INTERVAL_MS,
  DELIVERY_DURATION_BUCKETS,
  SourceMetrics
} from './source-metrics.ts'
export type { SourceActivity, SourceMetricsOptions, StatusClassLabel } from './source-metrics.ts'
export { CONTROL_DURATION_BUCKETS, ControllerMetrics, routeOf } from './controller-metrics.ts'
export type { ControllerMetricsOptions, ControllerView, RouteLabel, SourcePlacementView } from './controller-metrics.ts'
export { DEFAULT_LAG_HISTORY_MS, DEFAULT_LAG_INTERVAL_MS, LagMonitor } from './lag-monitor.ts'
export type { LagMonitorOptions, LagSnapshot } from './lag-monitor.ts'
export { registerSinkFlowMetrics } from './sink-flow-metrics.ts'
export type { SinkFlowView } from './sink-flow-metrics.ts'
export { registerSinkOriginMetrics } from './sink-origin-metrics.ts'
export type { SinkOriginView } from './sink-origin-metrics.ts'
