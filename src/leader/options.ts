import type { MemberStatus } from '../dispatcher/index.ts'
import type { KafkaConnection } from '../kafka/index.ts'
import type { PoolBounds, PoolDecision, Slots } from '../pool/index.ts'
import type { SchedulerConfig } from '../scheduler/index.ts'
import type { SecretKey } from '../secrets/index.ts'
import type { ResourceStore } from '../store/index.ts'
import type { Log } from '../log/index.ts'

/** Where the leader learns which dispatchers are alive. */
export interface MembersSource {
  /** Dispatchers nobody may consider dead yet. */
  liveDispatchers(): readonly MemberStatus[]
  /** Every dispatcher that has not left, dead or alive (absent: dead dispatchers' members are left to time out). */
  members?(): readonly MemberStatus[]
  /** Resolves once every heartbeat appended before the call is applied. */
  barrier?(): Promise<void>
  /** The highest incarnation of `id` ever seen, live or not. */
  highestIncarnation?(id: string): number | undefined
  on(event: 'change', listener: () => void): unknown
  off(event: 'change', listener: () => void): unknown
}

/** `--dispatchers MIN..MAX` and what to do with each decision. */
export interface PoolOptions {
  readonly bounds: PoolBounds
  /** The slots of a dispatcher the pool starts; absent: the largest live dispatcher's. */
  readonly capacity?: Slots
  /** Steps down wait until the smaller size held this long (default 30 s). */
  readonly stabilizationMs?: number
  /** Told every decision, about once a second and after every pass (the StatefulSet writer). */
  readonly onDecision?: (decision: PoolDecision) => void
}

/** What a SchedulerLeader (and each of its terms) runs with. */
export interface SchedulerLeaderOptions {
  readonly connection: KafkaConnection
  readonly store: ResourceStore
  readonly members: MembersSource
  readonly config: SchedulerConfig
  /** Wait this long after a change before a pass, so a burst of changes makes one pass. */
  readonly debounceMs?: number
  /** Told how long each scheduling pass took, in seconds (the controller's metrics). */
  readonly onPass?: (seconds: number) => void
  readonly log: Log
  /** The dispatcher pool this leader sizes (docs/pool.md); absent: the pool is decided on but not managed. */
  readonly pool?: PoolOptions
  /** Opens the Secrets of sources' `spec.net`, for the clients that read their clusters (lag, partition counts). */
  readonly secretKey?: SecretKey
  /** Told when this term finds itself fenced (the SchedulerLeader then looks again whether it leads). */
  readonly onDeposed?: () => void
}
