/**
 * The scheduler core: places sources' vreplicas on dispatchers across zones and nodes, with pluggable filter,
 * score and removal plugins (DESIGN §5, docs/scheduler.md). Pure and synchronous; the only I/O is
 * loadSchedulerConfig, which reads a YAML file.
 */
export { Scheduler } from './scheduler.ts'
export type { RestoreEntry, RestoreResult, SchedulerOptions } from './scheduler.ts'
export type { RebalanceOptions } from './rebalance.ts'
export { DEFAULT_BALANCEDNESS, parseSchedulerConfig } from './config.ts'
export type { BalancednessWeights, FilterEntry, SchedulerConfig, WeightedEntry } from './config.ts'
export { loadSchedulerConfig } from './load-config.ts'
export { DEFAULT_PROFILE, SCHEDULER_PROFILES, isProfileName } from './profiles.ts'
export type { SchedulerProfileName } from './profiles.ts'
export { BUILTIN_PLUGINS, PluginRegistry, createRegistry } from './registry.ts'
export { LEVELS, defineFilter, defineRemoval, defineScore } from './plugin.ts'
export type {
  ArgsSpec,
  Candidate,
  FilterPlugin,
  Level,
  PlacementContext,
  PluginType,
  RemovalCandidate,
  RemovalContext,
  RemovalPlugin,
  SchedulerPlugin,
  ScorePlugin
} from './plugin.ts'
export { EvenPodSpread, NoMaxResourceCount, PodFitsResources } from './plugins/filters.ts'
export type { EvenPodSpreadArgs } from './plugins/filters.ts'
export { AvailabilityNodePriority, AvailabilityZonePriority, LowestOrdinalPriority } from './plugins/scores.ts'
export {
  RemoveWithAvailabilityNodePriority,
  RemoveWithAvailabilityZonePriority,
  RemoveWithEvenPodSpreadPriority,
  RemoveWithHighestOrdinalPriority
} from './plugins/removals.ts'
export type {
  Balancedness,
  DispatcherInfo,
  DispatcherState,
  Move,
  PassResult,
  PassStats,
  PendingInfo,
  PendingReason,
  Placement,
  RebalanceProposal,
  SchedulerSummary,
  VPod,
  VPodChange
} from './types.ts'
