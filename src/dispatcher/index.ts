export { runDispatcherCommand, parseDispatcherArgs } from './dispatcher-command.ts'
export { startDispatcher } from './dispatcher.ts'
export type { ContractChange, DispatcherEvents, DispatcherStop, RunningDispatcher } from './dispatcher.ts'
export { DEFAULT_SCHEDULE_CAPACITY, DISPATCHER_ID } from './dispatcher-options.ts'
export type { DispatcherOptions } from './dispatcher-options.ts'
export { ContractState } from './contract-state.ts'
export type { ContractApply, ContractEntry } from './contract-state.ts'
export { dispatcherDefaultsFromEnv } from './env-defaults.ts'
export type { DispatcherEnvDefaults } from './env-defaults.ts'
export { nextIncarnation } from './incarnation.ts'
export {
  DEFAULT_LIVENESS_TIMEOUT_MS,
  MAX_LIVENESS_TIMEOUT_MS,
  MIN_LIVENESS_TIMEOUT_MS,
  checkLivenessTimeout,
  fenceAfterOf,
  fencedDrainOf,
  heartbeatDeadlineOf,
  heartbeatIntervalOf
} from './liveness.ts'
export { MembersView } from './members-view.ts'
export type { MemberApply, MemberState, MemberStatus, MembersViewOptions } from './members-view.ts'
export { checkContractRecord, checkMemberRecord } from './record-shapes.ts'
export type { Checked } from './record-shapes.ts'
export { startDataPlane } from './data-plane.ts'
export type { DataPlane, DataPlaneOptions } from './data-plane.ts'
export { startWiredDispatcher } from './dispatcher-wiring.ts'
export type { DispatcherWiring, WiredDispatcher } from './dispatcher-wiring.ts'
