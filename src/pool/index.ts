/**
 * The dispatcher pool (DESIGN §7, docs/pool.md): how many dispatchers the load needs — a pure decision the scheduler
 * leader makes and serves at `GET /shoal/v1/pool` — and the two that act on it: `shoal up`'s process supervisor and
 * the writer of a Kubernetes StatefulSet's scale.
 */
export { decidePool, stabilize } from './decide.ts'
export type { PoolBounds, PoolDecision, PoolInput, PoolMember, PoolReason, Slots } from './decide.ts'
export {
  MAX_POOL_SIZE,
  parsePoolBounds,
  parsePoolStabilization,
  parseStatefulSetRef,
  parseZones,
  zoneOf
} from './bounds.ts'
export { PoolSupervisor } from './supervisor.ts'
export type { DispatcherChild, PoolSupervisorOptions } from './supervisor.ts'
export { spawnDispatcher } from './dispatcher-process.ts'
export type { DispatcherProcessOptions } from './dispatcher-process.ts'
