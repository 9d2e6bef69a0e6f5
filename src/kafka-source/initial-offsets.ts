import { IsolationLevels, KafkaAdmin, kafkaClientOptions, kafkaSecurityOptions } from '../kafka/index.ts'
import { ErrorCodes, ShoalError } from '../errors/index.ts'
import type { KafkaClientSecurity } from '../kafka/index.ts'
import type { PartitionOffset } from './offset-committer.ts'
import type { InitialOffset } from './types.ts'

export interface CommitInitialOffsetsOptions {
  readonly brokers: readonly string[]
  readonly groupId: string
  readonly topics: readonly string[]
  readonly initialOffset: InitialOffset
  readonly clientId?: string
  /** SASL/TLS to the source's brokers (its resolved `spec.net`); absent: PLAINTEXT. */
  readonly security?: KafkaClientSecurity
}

export interface InitialOffsetsResult {
  /** Partitions this call committed, at the earliest or latest offset of the moment. */
  readonly committed: readonly PartitionOffset[]
  /** Partitions that already had a committed offset, left as they were. */
  readonly existing: number
  /**
   * The group had members when partitions without an offset were found, so Kafka refused the commit; each
   * member starts such a partition at initialOffset and commits it itself within a second.
   */
  readonly groupActive: boolean
}

/**
 * Commits a source's consumer-group offsets at `initialOffset` for every partition of its topics that has no
 * committed offset yet (Knative's "initial offsets committed"), so that a source created at `latest` with no
 * consumer running still delivers every record produced after this call, once a consumer starts. Idempotent:
 * a partition with an offset is never moved. Throws a retriable SHOAL_KAFKA error when a topic does not exist.
 */
export async function commitInitialOffsets(options: CommitInitialOffsetsOptions): Promise<InitialOffsetsResult> {
  const admin = new KafkaAdmin({
    ...kafkaClientOptions(options.clientId ?? `shoal-initial-offsets`, options.brokers, 'request'),
    ...kafkaSecurityOptions(options.security),
    retries: 3,
    retryDelay: 250
  })
  try {
    const existing = new Set(await admin.listTopics())
    const absent = options.topics.filter(t => !existing.has(t))
    if (absent.length > 0) {
      throw new ShoalError(ErrorCodes.KAFKA, `topic(s) ${absent.join(', ')} do not exist`, { retriable: true })
    }
    const metadata = await admin.metadata({ topics: [...options.topics], forceUpdate: true })
    const partitionsOf = new Map<string, number[]>()
    for (const topic of options.topics) {
      const count = metadata.topics.get(topic)?.partitionsCount
      if (count === undefined) {
        throw new ShoalError(ErrorCodes.KAFKA, `topic ${topic} has no metadata yet`, { retriable: true })
      }
      partitionsOf.set(
        topic,
        Array.from({ length: count }, (_, i) => i)
      )
    }
    const [group] = await admin.listConsumerGroupOffsets({
      groups: [
        {
          groupId: options.groupId,
          topics: [...partitionsOf].map(([name, partitionIndexes]) => ({ name, partitionIndexes }))
        }
      ]
    })
    const has = new Set<string>()
    for (const topic of group?.topics ?? []) {
      for (const p of topic.partitions) if (p.committedOffset >= 0n) has.add(`${topic.name}/${p.partitionIndex}`)
    }
    const missing = new Map<string, number[]>()
    for (const [topic, partitions] of partitionsOf) {
      const without = partitions.filter(p => !has.has(`${topic}/${p}`))
      if (without.length > 0) missing.set(topic, without)
    }
    if (missing.size === 0) return { committed: [], existing: has.size, groupActive: false }

    const timestamp = options.initialOffset === 'earliest' ? -2n : -1n
    const listed = await admin.listOffsets({
      topics: [...missing].map(([name, partitions]) => ({
        name,
        partitions: partitions.map(partitionIndex => ({ partitionIndex, timestamp }))
      })),
      isolationLevel: IsolationLevels.READ_COMMITTED
    })
    const committed: PartitionOffset[] = []
    for (const topic of listed) {
      for (const p of topic.partitions)
        committed.push({ topic: topic.name, partition: p.partitionIndex, offset: p.offset })
    }
    const byTopic = new Map<string, Array<{ partition: number; offset: bigint }>>()
    for (const { topic, partition, offset } of committed) {
      byTopic.set(topic, [...(byTopic.get(topic) ?? []), { partition, offset }])
    }
    try {
      await admin.alterConsumerGroupOffsets({
        groupId: options.groupId,
        topics: [...byTopic].map(([name, partitionOffsets]) => ({ name, partitionOffsets }))
      })
    } catch (error) {
      if (await hasMembers(admin, options.groupId)) return { committed: [], existing: has.size, groupActive: true }
      throw new ShoalError(ErrorCodes.KAFKA, `committing initial offsets of group ${options.groupId} failed`, {
        cause: error,
        retriable: true
      })
    }
    return { committed, existing: has.size, groupActive: false }
  } finally {
    await admin.close()
  }
}

async function hasMembers(admin: KafkaAdmin, groupId: string): Promise<boolean> {
  const groups = await admin.describeGroups({ groups: [groupId] }).catch(() => undefined)
  return (groups?.get(groupId)?.members.size ?? 0) > 0
}
