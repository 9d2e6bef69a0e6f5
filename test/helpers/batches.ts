// Fetched record batches as the client library decodes them, for the tests of the read_committed decoding.
import type { FetchedBatch } from '../../src/kafka/index.ts'

// Record batch attribute bits (Kafka protocol, RecordBatch.attributes).
export const TRANSACTIONAL = 0x10
export const CONTROL = 0x20
export const LOG_APPEND_TIME = 0x08

/** `count` records from `firstOffset`, values `v<offset>`, one header, timestamps 1000 + i. */
export function batch(firstOffset: bigint, count: number, options: Partial<FetchedBatch> = {}): FetchedBatch {
  return {
    firstOffset,
    lastOffsetDelta: count - 1,
    attributes: 0,
    producerId: -1n,
    firstTimestamp: 1_000n,
    maxTimestamp: 2_000n,
    records: Array.from({ length: count }, (_, i) => ({
      offsetDelta: i,
      timestampDelta: BigInt(i),
      key: null,
      value: Buffer.from(`v${firstOffset + BigInt(i)}`),
      headers: [[Buffer.from('h'), Buffer.from('x')]] as const
    })),
    ...options
  }
}

/** A transaction marker of `producerId` at `offset`. */
export function marker(offset: bigint, producerId: bigint): FetchedBatch {
  return { ...batch(offset, 1), attributes: TRANSACTIONAL | CONTROL, producerId, records: [] }
}
