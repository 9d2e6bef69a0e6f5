import { setTimeout as sleep } from 'node:timers/promises'
import { withTimeout } from '../util/index.ts'
import type { MemberStatus } from '../dispatcher/index.ts'
import { isMemberOf, removeStaticMembers } from '../kafka-source/index.ts'
import { kafkaErrorMessage } from '../kafka/index.ts'
import type { KafkaConnection } from '../kafka/index.ts'
import type { SourceNet } from '../secrets/index.ts'
import { isKafkaSource } from '../store/index.ts'
import type { ResourceStore, StoredEntry, StoredKafkaSource } from '../store/index.ts'
import type { Log } from '../log/index.ts'
import type { MembersSource } from './options.ts'

/** What DeadMembers reads, and asks, before it removes a dispatcher's members. */
export interface DeadMembersOptions {
  /** The controller's connection: its client id names the clients (each source's own brokers are used). */
  readonly connection: KafkaConnection
  /** The sources, with the placements the log holds for them (`scheduling`). */
  readonly store: Pick<ResourceStore, 'snapshot'>
  readonly net: SourceNet
  /** The heartbeats: who is dead, and a barrier that resolves once every heartbeat appended before it is applied. */
  readonly members: Required<Pick<MembersSource, 'members' | 'barrier'>> &
    Pick<MembersSource, 'liveDispatchers' | 'on' | 'off'>
  readonly log: Log
}

/** Groups asked at once: a zone's dispatchers dying together must not open a client per source all at once. */
const CONCURRENT_GROUPS = 4
/** Attempts per group: the coordinator may be moving (the same fault that killed the dispatcher). */
const ATTEMPTS = 3
const RETRY_MS = 1_000
/** How long reading the heartbeats up to their end may take before a removal is given up (a stalled view's read). */
const BARRIER_MS = 5_000

/**
 * Takes a dead dispatcher's members out of the consumer groups of the KafkaSources placed on it, once each time it
 * is declared dead, so that the groups' rebalances need not wait out the members' sessions (removeStaticMembers: a
 * moved coordinator gives them a fresh one).
 *
 * Every controller replica does it, not only the scheduler leader: the fault that kills a zone's dispatchers may
 * take the leader's zone too, and a new leader takes over only once the old one's session in the controllers' group
 * is over — about 4 s after the dispatchers are declared dead, in which their partitions would deliver nothing
 * (docs/faults.md, fix 19). A second replica to look finds nothing left to remove (the group is described first).
 *
 * Safe to race with the dispatcher, and with the other replicas: the dispatcher fenced itself and cut its deliveries
 * before anyone could declare it dead, a member that rejoined since is refused as fenced, not removed, and nothing is
 * removed unless the heartbeats, read up to their end first, still say it is dead. A replica whose view of the
 * heartbeats has stalled sees every dispatcher dead: one cut off from the members partition's leader fails that read,
 * but one cut off with it (the leader's zone cut) can read to an end that no longer moves. So nothing is removed, nor
 * asked to be, while the replica sees no dispatcher alive — a view in which the whole pool died at once is taken for a
 * stalled one, whose dispatchers' members are left to their sessions.
 */
export class DeadMembers {
  readonly #options: DeadMembersOptions
  /** The incarnation of each dispatcher, dead now, whose members are being or were removed. */
  readonly #handled = new Map<string, number>()
  readonly #onChange = () => this.#declared()
  readonly #removing = new Set<Promise<void>>()
  #stopped = false

  constructor(options: DeadMembersOptions) {
    this.#options = options
  }

  /** Follows the heartbeats from now on: each dispatcher newly declared dead has its members removed. */
  start(): void {
    this.#options.members.on('change', this.#onChange)
    this.#declared()
  }

  /** Stops following: the removals under way stop at their next look (see #stillDead). */
  stop(): void {
    this.#stopped = true
    this.#options.members.off('change', this.#onChange)
  }

  /** Resolves once the removals under way now are over. */
  async idle(): Promise<void> {
    await Promise.allSettled(this.#removing)
  }

  /** Starts the removal for each dispatcher dead now and newly declared so. */
  #declared(): void {
    const dead = this.#dead()
    // One that came back is handled again when it dies again, in the same incarnation or a new one.
    const ids = new Set(dead.map(m => m.id))
    for (const id of this.#handled.keys()) if (!ids.has(id)) this.#handled.delete(id)
    for (const { id, incarnation } of dead) {
      if (this.#handled.get(id) === incarnation) continue
      this.#handled.set(id, incarnation)
      const removing = this.#remove(id, incarnation)
        .catch((error: unknown) =>
          this.#options.log('warn', 'could not remove a dead dispatcher’s members', {
            dispatcher: id,
            error: String(error)
          })
        )
        .finally(() => this.#removing.delete(removing))
      this.#removing.add(removing)
    }
  }

  #dead(): MemberStatus[] {
    return this.#options.members.members().filter(m => m.state === 'dead')
  }

  /**
   * Whether the dispatcher is still dead in the same incarnation, in a view that sees some dispatcher alive (see the
   * class), and this replica still runs.
   */
  #stillDead(id: string, incarnation: number): boolean {
    return (
      !this.#stopped &&
      this.#options.members.liveDispatchers().length > 0 &&
      this.#dead().some(m => m.id === id && m.incarnation === incarnation)
    )
  }

  async #remove(dispatcher: string, incarnation: number): Promise<void> {
    // Read now, in the change that declared it dead: the placements still name it (the scheduler's pass that moves
    // its vreplicas comes later, debounced, and reaches the store through the log).
    const sources = this.#options.store
      .snapshot(key => key.startsWith('KafkaSource/'))
      .filter((e): e is StoredEntry<StoredKafkaSource> => isKafkaSource(e))
      .filter(
        ({ scheduling: p }) =>
          p?.slot === 'consumer' && p.placements.some(x => x.podName === dispatcher && x.vreplicas > 0)
      )
    if (sources.length === 0 || !this.#stillDead(dispatcher, incarnation)) return
    await withTimeout(this.#options.members.barrier(), BARRIER_MS, 'reading the heartbeats to their end')
    const queue = [...sources]
    const worker = async () => {
      for (let entry = queue.shift(); entry !== undefined; entry = queue.shift()) {
        await this.#removeFrom(entry, dispatcher, incarnation)
      }
    }
    await Promise.all(Array.from({ length: Math.min(CONCURRENT_GROUPS, queue.length) }, worker))
  }

  async #removeFrom(entry: StoredEntry<StoredKafkaSource>, dispatcher: string, incarnation: number): Promise<void> {
    const { net, log } = this.#options
    const resolved = net(entry)
    if (resolved.kind === 'unresolved') return
    const { bootstrapServers, consumerGroup } = entry.object.spec
    const stillWanted = () => this.#stillDead(dispatcher, incarnation)
    for (let attempt = 1; attempt <= ATTEMPTS && stillWanted(); attempt++) {
      try {
        const removed = await removeStaticMembers({
          connection: { brokers: bootstrapServers, clientId: `${this.#options.connection.clientId}-dead` },
          ...(resolved.security === undefined ? {} : { security: resolved.security }),
          groupId: consumerGroup,
          remove: instanceId => isMemberOf(dispatcher, instanceId),
          stillWanted,
          reason: `dispatcher ${dispatcher} declared dead by controller ${this.#options.connection.clientId}`
        })
        if (removed.length > 0) {
          log('info', 'a dead dispatcher’s members removed from their group', {
            dispatcher,
            source: entry.key,
            group: consumerGroup,
            members: removed
          })
        }
        return
      } catch (error) {
        // Only a wait is lost when it fails for good: their sessions time out as they would have.
        log(attempt < ATTEMPTS ? 'info' : 'warn', 'could not remove a dead dispatcher’s members from their group', {
          dispatcher,
          source: entry.key,
          group: consumerGroup,
          attempt,
          error: kafkaErrorMessage(error)
        })
        if (attempt < ATTEMPTS) await sleep(RETRY_MS)
      }
    }
  }
}
