import { readCommitted } from '../kafka/index.ts'
import type { AbortedTransaction, FetchedBatch } from '../kafka/index.ts'
import type { SourceRecord } from './types.ts'

/** Bytes smaller than this share of the buffer they sit in are copied out of it (see `detached`). */
const DETACH_BELOW = 1 / 4
const EMPTY = Buffer.alloc(0)

export interface DecodedFetch {
  readonly records: SourceRecord[]
  /**
   * Where the next fetch of the partition starts: past every batch returned, markers and aborted ones too; the
   * position itself when the answer held no batch (see `readCommitted`: an empty answer says nothing).
   */
  readonly next: bigint
}

/**
 * The committed records of one partition's fetch answer at and after `position` (read_committed done by
 * `readCommitted`), as SourceRecords. Every record carries `fetchedAt`, the moment the answer arrived.
 */
export function decodeFetchedBatches(
  topic: string,
  partition: number,
  batches: readonly FetchedBatch[],
  abortedTransactions: readonly AbortedTransaction[],
  position: bigint,
  fetchedAt: number = performance.now()
): DecodedFetch {
  const records: SourceRecord[] = []
  const next = readCommitted(batches, abortedTransactions, position, (record, offset, timestamp) => {
    const headers: Array<readonly [string, Buffer | null]> = []
    for (const [k, v] of record.headers) if (k) headers.push([k.toString(), v && detached(v)])
    records.push({
      topic,
      partition,
      offset,
      timestamp,
      key: record.key && detached(record.key),
      value: record.value && detached(record.value),
      headers,
      fetchedAt
    })
  })
  return { records, next }
}

/**
 * The bytes in a buffer of their own when they are a small part of the one they sit in. The client hands out
 * records as views into the fetch answer's socket reads (up to 64 KiB each), so a record still in flight — one
 * a slow sink holds while its neighbours are done — would keep the whole read alive. Small records are copied
 * (into Node's shared 8 KiB pool); large ones, already most of their read or copied whole by the client when
 * they span reads, are left as they are.
 */
export function detached(bytes: Buffer): Buffer {
  if (bytes.length === 0) return EMPTY
  return bytes.length < bytes.buffer.byteLength * DETACH_BELOW ? Buffer.from(bytes) : bytes
}
