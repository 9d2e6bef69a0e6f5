import {
  IsolationLevels,
  KafkaAdmin,
  kafkaClientOptions,
  kafkaErrorMessage,
  kafkaSecurityOptions
} from '../kafka/index.ts'
import { ErrorCodes, ShoalError } from '../errors/index.ts'
import { LagReader } from '../lag/index.ts'
import type { LagQuery, PartitionLag } from '../lag/index.ts'

/** Where `shoal offsets --reset` moves a group: the log start, the last stable offset, or the first record at or after a time. */
export type ResetTarget =
  { readonly kind: 'earliest' } | { readonly kind: 'latest' } | { readonly kind: 'timestamp'; readonly ms: number }

/** `earliest`, `latest`, an ISO-8601 time (`2025-01-31T12:00:00Z`) or milliseconds since the epoch; undefined otherwise. */
export function parseResetTarget(raw: string): ResetTarget | undefined {
  if (raw === 'earliest' || raw === 'latest') return { kind: raw }
  if (/^\d+$/.test(raw)) return { kind: 'timestamp', ms: Number(raw) }
  if (!/^\d{4}-\d{2}-\d{2}/.test(raw)) return undefined
  const ms = Date.parse(raw)
  return Number.isNaN(ms) ? undefined : { kind: 'timestamp', ms }
}

export interface OffsetsView {
  readonly groupId: string
  readonly totalLag: number
  readonly partitions: ReadonlyArray<{
    readonly topic: string
    readonly partition: number
    readonly committed: string | null
    readonly lastStable: string
    readonly lag: string
  }>
}

/** A source's committed offsets and lag per partition, read now (with the query's credentials, if any). */
export async function readOffsets(query: LagQuery): Promise<OffsetsView> {
  const reader = new LagReader('shoal-offsets')
  try {
    const reading = (await reader.read([query])).get(query.id)
    if (!reading || reading.kind === 'unreadable') {
      throw new ShoalError(ErrorCodes.KAFKA, reading?.reason ?? 'no answer from Kafka', { retriable: true })
    }
    return { groupId: query.groupId, totalLag: reading.totalLag, partitions: reading.partitions.map(view) }
  } finally {
    await reader.close()
  }
}

/**
 * Moves a source's committed offsets. Kafka accepts offsets for a group only while it has no members, so this is
 * for a paused source whose members have left; a group with members is refused with a message saying so.
 */
export async function resetOffsets(query: LagQuery, target: ResetTarget): Promise<OffsetsView> {
  const admin = new KafkaAdmin({
    ...kafkaClientOptions('shoal-offsets-reset', query.brokers, 'request'),
    ...kafkaSecurityOptions(query.security),
    retries: 2,
    retryDelay: 200
  })
  try {
    const groups = await admin.describeGroups({ groups: [query.groupId] })
    const members = groups.get(query.groupId)?.members.size ?? 0
    if (members > 0) {
      throw new ShoalError(
        ErrorCodes.CONFLICT,
        `consumer group ${query.groupId} still has ${members} member(s); the paused source's consumers are leaving — retry in a few seconds`,
        { retriable: true }
      )
    }
    const metadata = await admin.metadata({ topics: [...query.topics], forceUpdate: true })
    const timestamp = target.kind === 'earliest' ? -2n : target.kind === 'latest' ? -1n : BigInt(target.ms)
    const request = query.topics.map(name => {
      const count = metadata.topics.get(name)?.partitionsCount ?? 0
      if (count === 0) throw new ShoalError(ErrorCodes.KAFKA, `topic ${name} does not exist`)
      return { name, partitions: Array.from({ length: count }, (_, partitionIndex) => ({ partitionIndex, timestamp })) }
    })
    const listed = await admin.listOffsets({ topics: request, isolationLevel: IsolationLevels.READ_COMMITTED })
    // No record at or after the time: the end of the partition, as kafka-consumer-groups --to-datetime does.
    const ends =
      target.kind === 'timestamp'
        ? await admin.listOffsets({
            topics: request.map(t => ({ ...t, partitions: t.partitions.map(p => ({ ...p, timestamp: -1n })) })),
            isolationLevel: IsolationLevels.READ_COMMITTED
          })
        : []
    const endOf = new Map(ends.flatMap(t => t.partitions.map(p => [`${t.name}/${p.partitionIndex}`, p.offset])))
    await admin.alterConsumerGroupOffsets({
      groupId: query.groupId,
      topics: listed.map(t => ({
        name: t.name,
        partitionOffsets: t.partitions.map(p => ({
          partition: p.partitionIndex,
          offset: p.offset >= 0n ? p.offset : (endOf.get(`${t.name}/${p.partitionIndex}`) ?? 0n)
        }))
      }))
    })
  } catch (error) {
    if (error instanceof ShoalError) throw error
    throw new ShoalError(ErrorCodes.KAFKA, `could not move the offsets: ${kafkaErrorMessage(error)}`, {
      retriable: true
    })
  } finally {
    await admin.close().catch(() => undefined)
  }
  return readOffsets(query)
}

function view(p: PartitionLag): OffsetsView['partitions'][number] {
  return {
    topic: p.topic,
    partition: p.partition,
    committed: p.committed === undefined ? null : String(p.committed),
    lastStable: String(p.lastStable),
    lag: String(p.lag)
  }
}
