import type { Broker, ClusterMetadata } from '@platformatic/kafka'
import { GROUP_REBALANCE_TIMEOUT_MS, brokerHealth } from '../kafka/index.ts'
import type { MemberContext } from './member-context.ts'
import { StrandedWatch, strandedPartitions } from './stranded-partitions.ts'
import { sleep, withTimeout } from './wake.ts'

/** How old the client's cached metadata may be (its `metadataMaxAge` default). */
const CLIENT_METADATA_MAX_AGE_MS = 5_000

/** How long a coordinator the member looked up itself is used before it looks again (see #answering). */
const FOUND_COORDINATOR_MS = 1_000

/** How long one lookup of the coordinator may take: a hand-over's commit window is a second or two. */
const LOOKUP_MS = 1_000

/** The member's part of a commit's identity, as of one moment. */
export interface CommitIdentityOf {
  readonly generationId: number
  readonly memberId: string
  readonly coordinator: Broker
}

/**
 * A member's place in its group beyond what the client does by itself: joining until it succeeds, rejoining
 * when left outside or when a topic grows, and its identity (generation, member id, coordinator) for commits.
 */
export class GroupMembership {
  readonly #ctx: MemberContext
  #brokers = new Map<number, Broker>()
  /** Each subscribed topic's partition count when the member last looked (see checkPartitions). */
  #partitionCounts: Map<string, number> | undefined
  #growthSeenAt: number | undefined
  #checkingPartitions = false
  #joining: Promise<void> | undefined
  #inactiveSince: number | undefined
  /** Whether the client's last join made this member the group's leader. */
  #leader = false
  readonly #stranded = new StrandedWatch()
  #checkingAssignment = false
  /** The coordinator the member last looked up itself, instead of the client's one (`instead`), and when. */
  #found: { readonly instead: string; readonly coordinator: Broker; readonly at: number } | undefined
  /** The lookup on its way, which every commit and read waiting for one shares. */
  #lookup: Promise<Broker> | undefined
  /** Lookups that failed in a row: each asks the next broker that answers. */
  #lookupFailures = 0

  constructor(ctx: MemberContext) {
    this.#ctx = ctx
  }

  /** Joins (or rejoins) the group, retrying until it succeeds or the member stops. */
  join(): Promise<void> {
    this.#joining ??= (async () => {
      let failures = 0
      while (!this.#ctx.stopping()) {
        try {
          await this.#ctx.consumer.joinGroup({})
          return
        } catch (error) {
          if (this.#ctx.stopping()) return
          failures++
          this.#ctx.options.log(
            'warn',
            'joining the consumer group failed; retrying',
            this.#ctx.fields({ error, failures })
          )
          await sleep(Math.min(5_000, 250 * 2 ** Math.min(failures, 5)), this.#ctx.signal)
        }
      }
    })().finally(() => (this.#joining = undefined))
    return this.#joining
  }

  /**
   * The client rejoins by itself when a heartbeat says so, but gives up after its retries; a member left
   * outside the group that long joins again here.
   */
  watchMembership(): void {
    if (this.#ctx.consumer.isActive() || this.#joining) {
      this.#inactiveSince = undefined
      return
    }
    this.#inactiveSince ??= Date.now()
    if (Date.now() - this.#inactiveSince > GROUP_REBALANCE_TIMEOUT_MS) {
      this.#inactiveSince = undefined
      this.#ctx.options.log('warn', 'member outside its group; rejoining', this.#ctx.fields({}))
      void this.join()
    }
  }

  /** A join completed (the client's `consumer:group:join` event): whether this member leads the group now. */
  noteJoin(isLeader: boolean): void {
    this.#leader = isLeader
  }

  /** Times this member, as leader, made the group reassign partitions it had left with nobody. */
  get strandedRepairs(): number {
    return this.#stranded.repairs
  }

  /**
   * The leader's look for partitions a stable group left with nobody (see stranded-partitions.ts): `scheduled` on
   * its regular cadence; otherwise only when a first look asked for a second. Two looks at one generation that
   * find the same partition held by nobody make the leader rejoin, and a leader's JoinGroup always makes the
   * coordinator rebalance: every member rejoins with what it owns, and the leader assigns the rest.
   */
  async checkAssignment(scheduled: boolean): Promise<void> {
    if (!this.#leader || this.#ctx.stopping() || this.#checkingAssignment || this.#joining) return
    if (!scheduled && !this.#stranded.confirming) return
    this.#checkingAssignment = true
    try {
      const generation = this.#ctx.consumer.generationId
      const identity = await this.identityNow()
      // The counts the group was assigned with: partitions added since are checkPartitions' to bring in.
      const counts =
        this.#partitionCounts ??
        this.#partitionCountsIn(await this.#ctx.consumer.metadata({ topics: [...this.#ctx.topics] }))
      const view = await this.#ctx.options.committer.describe(identity.coordinator, this.#ctx.options.source.groupId)
      if (!this.#leader || this.#ctx.stopping() || this.#ctx.consumer.generationId !== generation) return
      const stranded = strandedPartitions(view, counts)
      if (this.#stranded.observe(generation, stranded) !== 'repair') return
      this.#ctx.options.log(
        'warn',
        'partitions held by no member of the stable group; rejoining as its leader to assign them',
        this.#ctx.fields({ partitions: stranded, generation })
      )
      this.#ctx.options.observer?.onStrandedRepair?.({
        sourceKey: this.#ctx.options.source.key,
        partitions: stranded.length
      })
      await this.#ctx.consumer.joinGroup({})
    } catch (error) {
      if (!this.#ctx.stopping()) {
        this.#ctx.options.log('warn', 'looking for partitions held by nobody failed', this.#ctx.fields({ error }))
      }
    } finally {
      this.#checkingAssignment = false
    }
  }

  /** Notes the partition counts the first assignment was made with, as near as the member can tell. */
  async notePartitionCounts(): Promise<void> {
    await this.#ctx.consumer
      .metadata({ topics: [...this.#ctx.topics] })
      .then(m => (this.#partitionCounts ??= this.#partitionCountsIn(m)))
      .catch(() => undefined)
  }

  /**
   * Partitions added to a subscribed topic are assigned only by a rebalance, and neither the client nor the
   * coordinator starts one for them: a member that sees a topic grow rejoins (once every member's cached metadata
   * is older than the growth, so the leader assigns with the new count).
   */
  async checkPartitions(): Promise<void> {
    if (this.#ctx.stopping() || this.#checkingPartitions) return
    this.#checkingPartitions = true
    try {
      const counts = this.#partitionCountsIn(
        await this.#ctx.consumer.metadata({ topics: [...this.#ctx.topics], forceUpdate: true })
      )
      const known = this.#partitionCounts
      if (known === undefined) {
        this.#partitionCounts = counts
        return
      }
      const grown = [...counts].filter(([t, n]) => n > (known.get(t) ?? 0))
      if (grown.length === 0) {
        this.#growthSeenAt = undefined
        return
      }
      this.#growthSeenAt ??= Date.now()
      if (Date.now() - this.#growthSeenAt < CLIENT_METADATA_MAX_AGE_MS + 500) return
      this.#partitionCounts = counts
      this.#growthSeenAt = undefined
      this.#ctx.options.log(
        'info',
        'partitions added to a topic; rejoining the group',
        this.#ctx.fields({ topics: grown })
      )
      await this.#ctx.consumer.joinGroup({})
    } catch (error) {
      if (!this.#ctx.stopping()) {
        this.#ctx.options.log('warn', 'checking for added partitions failed', this.#ctx.fields({ error }))
      }
    } finally {
      this.#checkingPartitions = false
    }
  }

  #partitionCountsIn(metadata: ClusterMetadata): Map<string, number> {
    return new Map([...this.#ctx.topics].map(t => [t, metadata.topics.get(t)?.partitionsCount ?? 0]))
  }

  /** The member's identity now, if it has a member id and knows its coordinator's address. */
  identity(): CommitIdentityOf | undefined {
    const consumer = this.#ctx.consumer
    const memberId = consumer.memberId
    const coordinatorId = consumer.coordinatorId
    const coordinator = coordinatorId === null ? undefined : this.#brokers.get(coordinatorId)
    if (!memberId || coordinator === undefined) return undefined
    return { generationId: consumer.generationId, memberId, coordinator }
  }

  /**
   * The member's identity now, learning the coordinator's address first if need be; throws without one. A
   * coordinator that answers nothing is replaced by the one Kafka names now (see #answering).
   */
  async identityNow(): Promise<CommitIdentityOf> {
    if (this.identity() === undefined && this.#ctx.consumer.memberId) {
      this.rememberBrokers(await this.#ctx.consumer.metadata({ topics: [...this.#ctx.topics] }))
    }
    const identity = this.identity()
    if (identity === undefined) throw new Error('no group membership (or coordinator) to commit with yet')
    return { ...identity, coordinator: await this.#answering(identity.coordinator) }
  }

  /**
   * The client learns of a new coordinator only when a request to its old one fails: after the request's timeout,
   * when the old one answers nothing (lost with its zone). Its generation and member id stay good at the new one,
   * which loads the group from the log. So a coordinator that answers nothing (`brokerHealth`) is looked up here,
   * of a broker that answers: a hand-over's mark and release, and the next owner's reads of them, reach the new
   * coordinator as soon as Kafka has one, not once the client's heartbeat has timed out (docs/faults.md, fix 20).
   */
  async #answering(coordinator: Broker): Promise<Broker> {
    const now = Date.now()
    const key = brokerKey(coordinator)
    if (!brokerHealth.suspect(key, now)) return coordinator
    const found = this.#found
    if (found?.instead === key && now - found.at < FOUND_COORDINATOR_MS) return found.coordinator
    this.#lookup ??= this.#lookUp(key).finally(() => (this.#lookup = undefined))
    return this.#lookup
  }

  /** One lookup, of one broker that answers (the next after each failure), bounded by LOOKUP_MS. */
  async #lookUp(instead: string): Promise<Broker> {
    const candidates = brokerHealth
      .order([...this.#brokers.values()], brokerKey, Date.now())
      .filter(b => brokerKey(b) !== instead)
    const asked = candidates[this.#lookupFailures % Math.max(1, candidates.length)]
    if (asked === undefined) throw new Error('no broker to ask for the group’s coordinator')
    try {
      const fresh = await withTimeout(
        this.#ctx.options.committer.findCoordinator(asked, this.#ctx.options.source.groupId),
        LOOKUP_MS,
        `asking ${brokerKey(asked)} for the group’s coordinator`
      )
      this.#lookupFailures = 0
      this.#found = { instead, coordinator: fresh, at: Date.now() }
      return fresh
    } catch (error) {
      this.#lookupFailures++
      throw error
    }
  }

  /** Keeps the brokers' addresses from fresh metadata (the coordinator's among them). */
  rememberBrokers(metadata: ClusterMetadata): void {
    this.#brokers = new Map([...metadata.brokers].map(([id, b]) => [id, { host: b.host, port: b.port }]))
  }
}

function brokerKey(broker: Broker): string {
  return `${broker.host}:${broker.port}`
}
