import type { Producer } from '@platformatic/kafka'
import { encodeValue, schemaHeaders } from './codec.ts'

/** One record for a store topic: a JSON value (or its encoding), or null for a tombstone. */
export interface LogAppend {
  readonly topic: string
  readonly partition: number
  readonly key: string
  readonly value: unknown
}

/**
 * Appends records in one Kafka transaction of a transactional producer: all of them or none. Returns the
 * offset of each record, in the order given. On failure the transaction is aborted and the error rethrown (a
 * fenced producer's error says so: see isFencing).
 */
export async function appendInTransaction(producer: Producer, records: readonly LogAppend[]): Promise<bigint[]> {
  const tx = await producer.beginTransaction()
  try {
    const result = await tx.send({
      messages: records.map(r => ({
        topic: r.topic,
        partition: r.partition,
        key: Buffer.from(r.key, 'utf8'),
        value:
          r.value === null ? (null as unknown as Buffer) : Buffer.isBuffer(r.value) ? r.value : encodeValue(r.value),
        headers: schemaHeaders()
      }))
    })
    await tx.commit()
    // One produce request carries one record batch per partition, in the order given: a record's offset is its
    // partition's base offset plus the records before it in that partition.
    const next = new Map<string, bigint>()
    for (const o of result.offsets ?? []) next.set(`${o.topic}/${o.partition}`, o.offset)
    return records.map(r => {
      const at = `${r.topic}/${r.partition}`
      const offset = next.get(at)
      if (offset === undefined) throw new Error(`the broker's answer has no offset for ${at}`)
      next.set(at, offset + 1n)
      return offset
    })
  } catch (error) {
    await tx.abort().catch(() => tx.cancel().catch(() => undefined))
    throw error
  }
}
