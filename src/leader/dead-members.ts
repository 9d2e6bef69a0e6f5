import { setTimeout as sleep } from 'node:timers/promises'
import type { MemberStatus } from '../dispatcher/index.ts'
import { isMemberOf, removeStaticMembers } from '../kafka-source/index.ts'
import { kafkaErrorMessage } from '../kafka/index.ts'
import type { KafkaConnection } from '../kafka/index.ts'
import type { SourceNet } from '../secrets/index.ts'
import { isKafkaSource } from '../store/index.ts'
import type { PlacementsRecord, ResourceStore, StoredEntry, StoredKafkaSource } from '../store/index.ts'
import type { Log } from '../log/index.ts'

/** What a term's DeadMembers reads, and asks, before it removes a dispatcher's members. */
export interface DeadMembersOptions {
  /** The controller's connection: its client id names the clients (each source's own brokers are used). */
  readonly connection: KafkaConnection
  readonly store: Pick<ResourceStore, 'peek'>
  readonly net: SourceNet
  /** The placements the log holds now, source key → record (read before the pass that moves them). */
  readonly placements: ReadonlyMap<string, PlacementsRecord>
  /** Resolves once every heartbeat appended before the call is applied (rejects when the log cannot be read). */
  readonly caughtUp: () => Promise<void>
  /** Whether the dispatcher is still dead in the same incarnation, and the term still leads. */
  readonly stillDead: (dispatcher: string, incarnation: number) => boolean
  readonly log: Log
}

/** Groups asked at once: a zone's dispatchers dying together must not open a client per source all at once. */
const CONCURRENT_GROUPS = 4
/** Attempts per group: the coordinator may be moving (the same fault that killed the dispatcher). */
const ATTEMPTS = 3
const RETRY_MS = 1_000

/**
 * Takes a dead dispatcher's members out of the consumer groups of the KafkaSources placed on it, once each time it
 * is declared dead, so that the groups' rebalances need not wait out the members' sessions (removeStaticMembers: a
 * moved coordinator gives them a fresh one). Safe to race with the dispatcher: it fenced itself and stopped its
 * members before anyone could declare it dead, a member that rejoined since is refused as fenced, not removed, and
 * nothing is removed unless the heartbeats read up to now still say it is dead (a stalled view of the heartbeats
 * makes every dispatcher look dead).
 */
export class DeadMembers {
  readonly #options: DeadMembersOptions
  /** The incarnation of each dispatcher, dead now, whose members are being or were removed. */
  readonly #handled = new Map<string, number>()

  constructor(options: DeadMembersOptions) {
    this.#options = options
  }

  /** Told the dispatchers that are dead now: starts the removal for each one newly declared dead. */
  declared(dead: readonly MemberStatus[]): void {
    // One that came back is handled again when it dies again, in the same incarnation or a new one.
    const ids = new Set(dead.map(m => m.id))
    for (const id of this.#handled.keys()) if (!ids.has(id)) this.#handled.delete(id)
    for (const { id, incarnation } of dead) {
      if (this.#handled.get(id) === incarnation) continue
      this.#handled.set(id, incarnation)
      this.#remove(id, incarnation).catch((error: unknown) =>
        this.#options.log('warn', 'could not remove a dead dispatcher’s members', {
          dispatcher: id,
          error: String(error)
        })
      )
    }
  }

  async #remove(dispatcher: string, incarnation: number): Promise<void> {
    const { store, placements } = this.#options
    const sources = [...placements.values()]
      .filter(p => p.slot === 'consumer' && p.placements.some(x => x.podName === dispatcher && x.vreplicas > 0))
      .map(p => store.peek(p.source))
      .filter((e): e is StoredEntry<StoredKafkaSource> => e !== undefined && isKafkaSource(e))
    if (sources.length === 0) return
    await this.#options.caughtUp()
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
    const stillWanted = () => this.#options.stillDead(dispatcher, incarnation)
    for (let attempt = 1; attempt <= ATTEMPTS && stillWanted(); attempt++) {
      try {
        const removed = await removeStaticMembers({
          connection: { brokers: bootstrapServers, clientId: `${this.#options.connection.clientId}-dead` },
          ...(resolved.security === undefined ? {} : { security: resolved.security }),
          groupId: consumerGroup,
          remove: instanceId => isMemberOf(dispatcher, instanceId),
          stillWanted,
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
