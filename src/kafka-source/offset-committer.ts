import {
  ConnectionPool,
  FindCoordinatorKeyTypes,
  decodeConsumerProtocolAssignment,
  describeGroupsV5,
  findCoordinatorV4,
  leaveGroupV5,
  offsetCommitV8,
  offsetFetchV8
} from '@platformatic/kafka'
import type { Broker } from '@platformatic/kafka'
import { ErrorCodes, ShoalError } from '../errors/index.ts'
import { brokerHealth, kafkaConnectionTimeouts, kafkaSecurityOptions } from '../kafka/index.ts'
import type { KafkaClientSecurity } from '../kafka/index.ts'
import type { GroupAssignmentView } from './stranded-partitions.ts'

/** Who commits: a group member's identity in its current generation. */
export interface CommitIdentity {
  readonly groupId: string
  readonly generationId: number
  readonly memberId: string
  readonly groupInstanceId: string | null
  /** The group coordinator's address. */
  readonly coordinator: Broker
}

export interface PartitionOffset {
  readonly topic: string
  readonly partition: number
  /** The next offset to consume. */
  readonly offset: bigint
  /** The commit's metadata string (see `commit-metadata.ts`); absent: none. */
  readonly metadata?: string | null
}

/** A committed offset as the coordinator holds it: -1 when the group has none for the partition. */
export interface CommittedOffset {
  readonly offset: bigint
  readonly metadata: string | null
}

/**
 * Commits a member's offsets with OffsetCommit on a connection of its own, not the member's client's.
 * The client sends group requests (JoinGroup, Heartbeat, its own commits) on one coordinator connection, and a
 * broker answers a connection's requests in order; a JoinGroup is answered only when the rebalance completes,
 * so a commit queued behind it would wait out the rebalance and then fail with a stale generation — and the
 * client answers a failed commit by rejoining, which starts another rebalance. Here a commit during a
 * rebalance (the moment that matters most: partitions are about to move) reaches the coordinator at once,
 * and a failure is only reported: the member's heartbeat, not a commit, decides when to rejoin.
 *
 * Its connections wait on a broker as every Shoal client's do (`kafkaConnectionTimeouts`), and a coordinator that
 * answers nothing (`brokerHealth`: lost with its zone) is not asked at all: the commit fails at once. A hand-over's
 * release is tried for a second after the drain; a connection opened to the lost coordinator had spent it all (the
 * lab's broker zone loss: the release given up, and the partition's next owner waiting out the hand-over, 15 s after
 * the loss). The member looks up the new coordinator itself (`findCoordinator`, from `GroupMembership.identityNow`)
 * rather than wait for its client to learn of it.
 */
export class OffsetCommitter {
  readonly #pool: ConnectionPool

  constructor(clientId: string, security?: KafkaClientSecurity) {
    this.#pool = new ConnectionPool(`${clientId}-commits`, {
      ...kafkaSecurityOptions(security),
      ...kafkaConnectionTimeouts('request')
    })
  }

  /**
   * Commits the offsets. With `sendBy` (ms since the epoch), a commit not yet sent by then — its connection still
   * opening — is not sent at all, and throws: a hand-over's commit must not land past its window.
   */
  async commit(identity: CommitIdentity, offsets: readonly PartitionOffset[], sendBy?: number): Promise<void> {
    if (offsets.length === 0) return
    const byTopic = new Map<string, offsetCommitV8.OffsetCommitRequestPartition[]>()
    for (const { topic, partition, offset, metadata } of offsets) {
      const list = byTopic.get(topic) ?? []
      list.push({
        partitionIndex: partition,
        committedOffset: offset,
        committedLeaderEpoch: -1,
        committedMetadata: metadata ?? null
      })
      byTopic.set(topic, list)
    }
    const connection = await this.#pool.get(answering(identity.coordinator))
    if (sendBy !== undefined && Date.now() > sendBy) {
      throw new Error(`the commit was not sent by ${new Date(sendBy).toISOString()}, its window's end`)
    }
    await offsetCommitV8.api.async(
      connection,
      identity.groupId,
      identity.generationId,
      identity.memberId,
      identity.groupInstanceId,
      [...byTopic].map(([name, partitions]) => ({ name, partitions }))
    )
  }

  /** The group's committed offsets of some partitions, with their metadata (`topic/partition` keys). */
  async committed(
    coordinator: Broker,
    groupId: string,
    partitions: ReadonlyArray<{ readonly topic: string; readonly partition: number }>
  ): Promise<Map<string, CommittedOffset>> {
    const byTopic = new Map<string, number[]>()
    for (const { topic, partition } of partitions) byTopic.set(topic, [...(byTopic.get(topic) ?? []), partition])
    const connection = await this.#pool.get(answering(coordinator))
    const response = await offsetFetchV8.api.async(
      connection,
      [
        {
          groupId,
          memberId: null,
          memberEpoch: -1,
          topics: [...byTopic].map(([name, indexes]) => ({ name, partitionIndexes: indexes }))
        }
      ],
      false
    )
    const result = new Map<string, CommittedOffset>()
    for (const group of response.groups) {
      if (group.errorCode !== 0) throw new Error(`OffsetFetch for ${groupId} failed with error code ${group.errorCode}`)
      for (const topic of group.topics) {
        for (const p of topic.partitions) {
          if (p.errorCode !== 0)
            throw new Error(`OffsetFetch of ${topic.name}/${p.partitionIndex} failed with error code ${p.errorCode}`)
          result.set(`${topic.name}/${p.partitionIndex}`, { offset: p.committedOffset, metadata: p.metadata ?? null })
        }
      }
    }
    return result
  }

  /** The group's state and what the coordinator assigned each member (DescribeGroups). */
  async describe(coordinator: Broker, groupId: string): Promise<GroupAssignmentView> {
    const connection = await this.#pool.get(answering(coordinator))
    const response = await describeGroupsV5.api.async(connection, [groupId], false)
    const group = response.groups.find(g => g.groupId === groupId)
    if (group === undefined) throw new Error(`DescribeGroups did not answer for ${groupId}`)
    if (group.errorCode !== 0)
      throw new Error(`DescribeGroups for ${groupId} failed with error code ${group.errorCode}`)
    return {
      state: group.groupState,
      members: group.members.map(m => ({
        memberId: m.memberId,
        assigned: decodeConsumerProtocolAssignment(m.memberAssignment).assignedPartitions.map(a => ({
          topic: a.topic,
          partitions: a.partitions
        }))
      }))
    }
  }

  /**
   * The group's coordinator as Kafka names it now (FindCoordinator, asked of `asked`): for a member whose client
   * still names one that answers nothing. Throws, retriable, while Kafka has none, or names one that answers nothing.
   */
  async findCoordinator(asked: Broker, groupId: string): Promise<Broker> {
    const connection = await this.#pool.get(answering(asked))
    const response = await findCoordinatorV4.api.async(connection, FindCoordinatorKeyTypes.GROUP, [groupId])
    const found = response.coordinators.find(c => c.key === groupId)
    if (found === undefined || found.errorCode !== 0) {
      throw new ShoalError(
        ErrorCodes.KAFKA,
        `no coordinator for the group ${groupId} yet (FindCoordinator error code ${found?.errorCode})`,
        { retriable: true }
      )
    }
    return answering({ host: found.host, port: found.port })
  }

  /**
   * Takes a member out of its group now. The client's own LeaveGroup names the member id only, and the
   * coordinator keeps a static member (one with a group instance id) until its session times out on such a
   * request; naming the instance id too makes the leave immediate, so its partitions move at once.
   */
  async leave(identity: CommitIdentity, reason: string): Promise<void> {
    const connection = await this.#pool.get(answering(identity.coordinator))
    await leaveGroupV5.api.async(connection, identity.groupId, [
      { memberId: identity.memberId, groupInstanceId: identity.groupInstanceId, reason }
    ])
  }

  async close(): Promise<void> {
    await this.#pool.close()
  }
}

/** The coordinator, unless it answers nothing (see the class): then a retriable error, at once. */
function answering(coordinator: Broker): Broker {
  const key = `${coordinator.host}:${coordinator.port}`
  if (brokerHealth.suspect(key, Date.now())) {
    throw new ShoalError(
      ErrorCodes.KAFKA,
      `the group coordinator ${key} answers nothing; retrying once the member finds the next one`,
      { retriable: true }
    )
  }
  return coordinator
}
