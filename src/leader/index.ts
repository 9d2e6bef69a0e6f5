/**
 * The scheduler leader: the replica that owns bucket 0 places every source on the dispatchers and writes the
 * placements and contracts (DESIGN §4, §5), sizes and drains the dispatcher pool, and applies approved
 * rebalances. Also the follower of `<prefix>.members` that tells it which dispatchers are alive.
 */
export { SchedulerLeader } from './scheduler-leader.ts'
export { LeaderTerm } from './leader-term.ts'
export type { MembersSource, PoolOptions, SchedulerLeaderOptions } from './options.ts'
export { DEFAULT_POOL_STABILIZATION_MS } from './pool-sizer.ts'
export type { PoolView } from './pool-sizer.ts'
export { leaderWrites, movedChain } from './leader-writes.ts'
export type { LeaderWrite, LeaderWritesInput } from './leader-writes.ts'
export { MembersFollower } from './members-follower.ts'
export { DeadMembers } from './dead-members.ts'
export type { DeadMembersOptions } from './dead-members.ts'
export type { MembersFollowerOptions } from './members-follower.ts'
