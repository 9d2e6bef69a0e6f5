import { EventEmitter } from 'node:events'
import {
  GROUP_HEARTBEAT_INTERVAL_MS,
  GROUP_REBALANCE_TIMEOUT_MS,
  GROUP_SESSION_TIMEOUT_MS,
  KafkaConsumer,
  kafkaClientOptions
} from '../kafka/index.ts'
import type { KafkaConnection } from '../kafka/index.ts'
import { assignBuckets, decodeBucketClaim, encodeBucketClaim } from './bucket-assignor.ts'
import type { StoreNames } from './names.ts'

/** This replica's share of the buckets after a group rebalance. */
export interface Assignment {
  readonly generation: number
  readonly buckets: readonly number[]
}

export interface MembershipOptions {
  readonly connection: KafkaConnection
  readonly names: StoreNames
  readonly sessionTimeoutMs?: number
}

/**
 * Controllers are members of one consumer group on the resources topic; the partitions Kafka assigns a
 * replica are its buckets. The member never fetches through the group: it only holds the assignment
 * (the tailer reads every partition for every replica).
 */
export class Membership extends EventEmitter<{ assignment: [Assignment]; error: [unknown] }> {
  readonly #consumer: KafkaConsumer
  readonly #options: MembershipOptions
  #current: Assignment = { generation: -1, buckets: [] }

  constructor(options: MembershipOptions) {
    super()
    this.#options = options
    this.#consumer = new KafkaConsumer({
      ...kafkaClientOptions(`${options.connection.clientId}-member`, options.connection.brokers, 'group'),
      groupId: options.names.controllersGroup,
      sessionTimeout: options.sessionTimeoutMs ?? GROUP_SESSION_TIMEOUT_MS,
      heartbeatInterval: GROUP_HEARTBEAT_INTERVAL_MS,
      rebalanceTimeout: GROUP_REBALANCE_TIMEOUT_MS,
      retries: 10,
      retryDelay: 500,
      // Each member tells what it holds; the group's leader keeps everyone's buckets where it can (bucket-assignor.ts).
      protocolsMetadata: () => (this.#current.generation < 0 ? Buffer.alloc(0) : encodeBucketClaim(this.#current)),
      partitionAssigner: (_self, members, _topics, metadata) => {
        const topic = options.names.resourcesTopic
        const count = metadata.topics.get(topic)?.partitionsCount ?? 0
        const shares = assignBuckets(
          [...members.values()].map(m => ({ memberId: m.memberId, claim: decodeBucketClaim(m.metadata) })),
          count
        )
        return [...shares].map(([memberId, partitions]) => ({
          memberId,
          assignments: new Map([[topic, { topic, partitions }]])
        }))
      }
    })
    this.#consumer.on('consumer:group:join', payload => this.#onJoin(payload))
    this.#consumer.on('error', error => this.emit('error', error))
  }

  get current(): Assignment {
    return this.#current
  }

  async start(): Promise<void> {
    this.#consumer.topics.trackAll(this.#options.names.resourcesTopic)
    await this.#consumer.joinGroup({
      sessionTimeout: this.#options.sessionTimeoutMs ?? GROUP_SESSION_TIMEOUT_MS,
      heartbeatInterval: GROUP_HEARTBEAT_INTERVAL_MS,
      rebalanceTimeout: GROUP_REBALANCE_TIMEOUT_MS
    })
  }

  /** Leaves the group (close does) so the others take the buckets at once, without waiting for the session timeout. */
  async stop(): Promise<void> {
    await this.#consumer.close(true).catch(() => undefined)
  }

  #onJoin(payload: { generationId?: number; assignments?: Array<{ topic: string; partitions: number[] }> }): void {
    const buckets = (payload.assignments ?? [])
      .filter(a => a.topic === this.#options.names.resourcesTopic)
      .flatMap(a => a.partitions)
      .sort((a, b) => a - b)
    this.#current = { generation: payload.generationId ?? this.#current.generation + 1, buckets }
    this.emit('assignment', this.#current)
  }
}
