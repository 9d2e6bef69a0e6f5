import { Admin, ProduceAcks, Producer } from '@platformatic/kafka'
import { ensureTopics } from '../../src/kafka/index.ts'
import { SourceRunner } from '../../src/kafka-source/index.ts'
import type { Deliver, ConsumerSpec, Outcome, SourceRecord, SourceRunnerOptions } from '../../src/kafka-source/index.ts'
import { brokers } from '../helpers/kafka.ts'
import type { Log } from '../../src/log/index.ts'

export async function createTopic(name: string, partitions: number): Promise<void> {
  await ensureTopics({ brokers: brokers(), clientId: `test-${name}` }, [{ name, partitions, configs: {} }])
}

export interface TestMessage {
  readonly partition: number
  readonly value: string
  readonly key?: string
}

/** Produces with acks=all, in batches, so what is sent is in the log when this resolves. */
export async function produce(topic: string, messages: readonly TestMessage[]): Promise<void> {
  // Idempotent: a send retried while the new topic's leader settles is written once.
  const producer = new Producer({
    clientId: `test-producer-${topic}`,
    bootstrapBrokers: brokers(),
    idempotent: true
  })
  try {
    for (let i = 0; i < messages.length; i += 500) {
      await producer.send({
        acks: ProduceAcks.ALL,
        messages: messages.slice(i, i + 500).map(m => ({
          topic,
          partition: m.partition,
          value: Buffer.from(m.value),
          ...(m.key === undefined ? {} : { key: Buffer.from(m.key) })
        }))
      })
    }
  } finally {
    await producer.close()
  }
}

/** `count` messages spread round-robin over `partitions`, values `<prefix>-<i>`. */
export function messages(count: number, partitions: number, prefix = 'm'): TestMessage[] {
  return Array.from({ length: count }, (_, i) => ({ partition: i % partitions, value: `${prefix}-${i}` }))
}

/** Records what `deliver` got: every call, in order, per partition. */
export class Collector {
  readonly calls: SourceRecord[] = []
  readonly #seen = new Map<string, number>()

  readonly deliver = async (record: SourceRecord): Promise<Outcome> => {
    this.record(record)
    return 'delivered'
  }

  record(record: SourceRecord): void {
    this.calls.push(record)
    const value = record.value?.toString() ?? ''
    this.#seen.set(value, (this.#seen.get(value) ?? 0) + 1)
  }

  /** Distinct values handled. */
  get distinct(): number {
    return this.#seen.size
  }

  get duplicates(): number {
    return this.calls.length - this.#seen.size
  }

  has(value: string): boolean {
    return this.#seen.has(value)
  }

  /** Values in the order `deliver` was called for one partition. */
  partition(partition: number): string[] {
    return this.calls.filter(r => r.partition === partition).map(r => r.value?.toString() ?? '')
  }
}

/** The group's committed offsets of a topic's partitions (-1 where none). */
export async function committedOffsets(groupId: string, topic: string, partitions: number): Promise<bigint[]> {
  const result = Array.from({ length: partitions }, () => -1n)
  for (const p of await committedEntries(groupId, topic, partitions)) result[p.partitionIndex] = p.committedOffset
  return result
}

/** Each partition's committed offset with its metadata, as the coordinator answers OffsetFetch. */
export async function committedEntries(
  groupId: string,
  topic: string,
  partitions: number
): Promise<Array<{ partitionIndex: number; committedOffset: bigint; metadata?: string | null | undefined }>> {
  const admin = new Admin({ clientId: `test-offsets-${groupId}`, bootstrapBrokers: brokers() })
  try {
    const [group] = await admin.listConsumerGroupOffsets({
      groups: [
        { groupId, topics: [{ name: topic, partitionIndexes: Array.from({ length: partitions }, (_, i) => i) }] }
      ]
    })
    return group?.topics.find(t => t.name === topic)?.partitions ?? []
  } finally {
    await admin.close()
  }
}

/** The end (high watermark) of each partition of a topic. */
export async function endOffsets(topic: string, partitions: number): Promise<bigint[]> {
  const admin = new Admin({ clientId: `test-ends-${topic}`, bootstrapBrokers: brokers() })
  try {
    const [listed] = await admin.listOffsets({
      topics: [
        {
          name: topic,
          partitions: Array.from({ length: partitions }, (_, i) => ({ partitionIndex: i, timestamp: -1n }))
        }
      ]
    })
    const result = Array.from({ length: partitions }, () => -1n)
    for (const p of listed?.partitions ?? []) result[p.partitionIndex] = p.offset
    return result
  } finally {
    await admin.close()
  }
}

/** The group's members (static ids) and their assigned partitions of `topic`, from the coordinator. */
export async function describeGroup(
  groupId: string,
  topic: string
): Promise<{ state: string; members: Map<string, number[]> }> {
  const admin = new Admin({ clientId: `test-describe-${groupId}`, bootstrapBrokers: brokers() })
  try {
    const group = (await admin.describeGroups({ groups: [groupId] })).get(groupId)
    const members = new Map<string, number[]>()
    for (const member of group?.members.values() ?? []) {
      members.set(member.groupInstanceId ?? member.id, [...(member.assignments?.get(topic)?.partitions ?? [])].sort())
    }
    return { state: String(group?.state), members }
  } finally {
    await admin.close()
  }
}

/** A log that fails the test on errors and keeps the rest for a look when one fails. */
export function testLog(lines: string[] = []): Log {
  return (level, message, fields) => {
    lines.push(
      `${level} ${message} ${JSON.stringify(fields, (_, v: unknown) => (typeof v === 'bigint' ? String(v) : v instanceof Error ? v.message : v))}`
    )
  }
}

/**
 * A runner of the source named `name` (its topic and group too), `earliest`, on the test's Kafka: vreplicas 1
 * on `dispatcher-0` unless `options` say otherwise.
 */
export function runnerOf(
  name: string,
  deliver: Deliver,
  source: Partial<ConsumerSpec> = {},
  options: Partial<Omit<SourceRunnerOptions, 'source' | 'deliver'>> = {}
): SourceRunner {
  return new SourceRunner({
    brokers: brokers(),
    source: {
      key: `KafkaSource/default/${name}`,
      groupId: name,
      topics: [name],
      initialOffset: 'earliest',
      ordering: 'ordered',
      ...source
    },
    vreplicas: 1,
    dispatcherId: 'dispatcher-0',
    log: testLog(),
    ...options,
    deliver
  })
}
