import type { MemberStatus } from '../dispatcher/index.ts'
import { isMemberOf, removeStaticMembers } from '../kafka-source/index.ts'
import { kafkaErrorMessage } from '../kafka/index.ts'
import type { KafkaConnection } from '../kafka/index.ts'
import type { SourceNet } from '../secrets/index.ts'
import { isKafkaSource } from '../store/index.ts'
import type { PlacementsRecord, ResourceStore } from '../store/index.ts'
import type { Log } from '../log/index.ts'

export interface DeadMembersOptions {
  /** The controller's connection: its client id names the clients (each source's own brokers are used). */
  readonly connection: KafkaConnection
  readonly store: Pick<ResourceStore, 'peek'>
  readonly net: SourceNet
  /** The placements the log holds now, source key → record (read before the pass that moves them). */
  readonly placements: ReadonlyMap<string, PlacementsRecord>
  /** Whether the dispatcher is still dead in the same incarnation (asked again right before the removal). */
  readonly stillDead: (dispatcher: string, incarnation: number) => boolean
  readonly log: Log
}

/**
 * Takes a dead dispatcher's members out of the consumer groups of the KafkaSources placed on it, once per incarnation
 * declared dead, so that the groups' rebalances need not wait out the members' sessions (removeStaticMembers: a
 * moved coordinator gives them a fresh one). Safe to race with the dispatcher: it fenced itself and stopped its
 * members before anyone could declare it dead, and a member that rejoined since is refused as fenced, not removed.
 */
export class DeadMembers {
  readonly #options: DeadMembersOptions
  /** The incarnation of each dispatcher whose members were removed. */
  readonly #handled = new Map<string, number>()

  constructor(options: DeadMembersOptions) {
    this.#options = options
  }

  /** Told the dispatchers that are dead now: starts the removal for each one newly declared dead. */
  declared(dead: readonly MemberStatus[]): void {
    for (const { id, incarnation } of dead) {
      if (this.#handled.get(id) === incarnation) continue
      this.#handled.set(id, incarnation)
      void this.#remove(id, incarnation)
    }
  }

  async #remove(dispatcher: string, incarnation: number): Promise<void> {
    const { store, net, log } = this.#options
    const sources = [...this.#options.placements.values()]
      .filter(p => p.slot === 'consumer' && p.placements.some(x => x.podName === dispatcher && x.vreplicas > 0))
      .map(p => store.peek(p.source))
    await Promise.all(
      sources.map(async entry => {
        if (entry === undefined || !isKafkaSource(entry)) return
        const resolved = net(entry)
        if (resolved.kind === 'unresolved') return
        const { bootstrapServers, consumerGroup } = entry.object.spec
        try {
          const removed = await removeStaticMembers({
            connection: { brokers: bootstrapServers, clientId: this.#options.connection.clientId },
            ...(resolved.security === undefined ? {} : { security: resolved.security }),
            groupId: consumerGroup,
            remove: instanceId => isMemberOf(dispatcher, instanceId),
            stillWanted: () => this.#options.stillDead(dispatcher, incarnation),
            reason: `dispatcher ${dispatcher} declared dead by the scheduler leader`
          })
          if (removed.length > 0) {
            log('info', 'a dead dispatcher’s members removed from their group', {
              dispatcher,
              source: entry.key,
              group: consumerGroup,
              members: removed
            })
          }
        } catch (error) {
          // Only a wait saved: their sessions time out as they would have.
          log('warn', 'could not remove a dead dispatcher’s members from their group', {
            dispatcher,
            source: entry.key,
            group: consumerGroup,
            error: kafkaErrorMessage(error)
          })
        }
      })
    )
  }
}
