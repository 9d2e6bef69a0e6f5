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
/** Bytes of keys and values one produce request of a transaction carries at most: well under the broker's 1 MiB. */
const CHUNK_BYTES = 256 * 1024

export async function appendInTransaction(producer: Producer, records: readonly LogAppend[]): Promise<bigint[]> {
  const encoded = records.map(r => ({
    topic: r.topic,
    partition: r.partition,
    key: Buffer.from(r.key, 'utf8'),
    value: r.value === null ? (null as unknown as Buffer) : Buffer.isBuffer(r.value) ? r.value : encodeValue(r.value),
    headers: schemaHeaders()
  }))
  const tx = await producer.beginTransaction()
  try {
    const offsets: bigint[] = []
    // A scheduling pass may write thousands of contracts: several requests, one transaction, so no record batch
    // passes the broker's message.max.bytes.
    for (let start = 0; start < encoded.length;) {
      let end = start
      let bytes = 0
      while (end < encoded.length && (end === start || bytes < CHUNK_BYTES)) {
        const m = encoded[end] as (typeof encoded)[number]
        bytes += m.key.length + (m.value?.length ?? 0) + 64
        end++
      }
      const chunk = encoded.slice(start, end)
      const result = await tx.send({ messages: chunk })
      // One produce request carries one record batch per partition, in the order given: a record's offset is
      // its partition's base offset plus the records before it in that partition.
      const next = new Map<string, bigint>()
      for (const o of result.offsets ?? []) next.set(`${o.topic}/${o.partition}`, o.offset)
      for (const m of chunk) {
        const at = `${m.topic}/${m.partition}`
        const offset = next.get(at)
        if (offset === undefined) throw new Error(`the broker's answer has no offset for ${at}`)
        next.set(at, offset + 1n)
        offsets.push(offset)
      }
      start = end
    }
    await tx.commit()
    return offsets
  } catch (error) {
    await tx.abort().catch(() => tx.cancel().catch(() => undefined))
    throw error
  }
}
