import type { Producer } from '@platformatic/kafka'
import { encodeValue, schemaHeaders } from './codec.ts'

/** One record for a store topic: a JSON value, or null for a tombstone. */
export interface LogAppend {
  readonly topic: string
  readonly partition: number
  readonly key: string
  readonly value: unknown
}

/**
 * Appends records in one Kafka transaction of a transactional producer: all of them or none. Returns the
 * offset of the first record written to each topic. On failure the transaction is aborted and the error
 * rethrown (a fenced producer's error says so: see isFencing).
 */
export async function appendInTransaction(
  producer: Producer,
  records: readonly LogAppend[]
): Promise<Map<string, bigint>> {
  const tx = await producer.beginTransaction()
  try {
    const result = await tx.send({
      messages: records.map(r => ({
        topic: r.topic,
        partition: r.partition,
        key: Buffer.from(r.key, 'utf8'),
        value: r.value === null ? (null as unknown as Buffer) : encodeValue(r.value),
        headers: schemaHeaders()
      }))
    })
    await tx.commit()
    const offsets = new Map<string, bigint>()
    for (const o of result.offsets ?? []) if (!offsets.has(o.topic)) offsets.set(o.topic, o.offset)
    return offsets
  } catch (error) {
    await tx.abort().catch(() => tx.cancel().catch(() => undefined))
    throw error
  }
}
