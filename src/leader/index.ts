/**
 * The scheduler leader: the replica that owns bucket 0 places every source on the dispatchers and writes the
 * placements and contracts (DESIGN §4, §5), sizes and drains the dispatcher pool, and applies approved
 * rebalances. Also the follower of `<prefix>.members` that tells it which dispatchers are alive.
 */
export { DEFAULT_POOL_STABILIZATION_MS, LeaderTerm, SchedulerLeader, movedChain } from './scheduler-leader.ts'
export type { MembersSource, PoolOptions, PoolView, SchedulerLeaderOptions } from './scheduler-leader.ts'
export { MembersFollower } from './members-follower.ts'
export type { MembersFollowerOptions } from './members-follower.ts'
