import type { SourceRecord } from './types.ts'

// Record batch attribute bits (Kafka protocol, RecordBatch.attributes).
const LOG_APPEND_TIME = 0x08
const TRANSACTIONAL = 0x10
const CONTROL = 0x20

/** Bytes smaller than this share of the buffer they sit in are copied out of it (see `detached`). */
const DETACH_BELOW = 1 / 4
const EMPTY = Buffer.alloc(0)

/** The parts of a fetched record batch this reads (the client's RecordsBatch has them). */
export interface FetchedBatch {
  readonly firstOffset: bigint
  readonly lastOffsetDelta: number
  readonly attributes: number
  readonly producerId: bigint
  readonly firstTimestamp: bigint
  readonly maxTimestamp: bigint
  readonly records: ReadonlyArray<{
    readonly offsetDelta: number
    readonly timestampDelta: bigint
    readonly key: Buffer | null
    readonly value: Buffer | null
    readonly headers: ReadonlyArray<readonly [Buffer | null, Buffer | null]>
  }>
}

export interface AbortedTransaction {
  readonly producerId: bigint
  readonly firstOffset: bigint
}

export interface DecodedFetch {
  readonly records: SourceRecord[]
  /** Where the next fetch of the partition starts: past every batch returned, markers and aborted ones too. */
  readonly next: bigint
}

/**
 * The committed records of one partition's fetch response at and after `position`, with read_committed done
 * right: the broker returns data up to the last stable offset but leaves dropping aborted transactions to the
 * client. The client library drops an aborted range only when its marker is in the same response, so this
 * tracks the response's aborted-transaction list itself (as Kafka's Java consumer does): a producer's
 * transactional batches are skipped from its aborted transaction's first offset to its next marker. Every
 * record carries `fetchedAt`, the moment the response arrived.
 */
export function decodeFetchedBatches(
  topic: string,
  partition: number,
  batches: readonly FetchedBatch[],
  abortedTransactions: readonly AbortedTransaction[],
  position: bigint,
  lastStableOffset: bigint,
  fetchedAt: number = performance.now()
): DecodedFetch {
  const records: SourceRecord[] = []
  let next = position
  const pendingAborts = [...abortedTransactions].sort((a, b) => (a.firstOffset < b.firstOffset ? -1 : 1))
  const aborted = new Set<bigint>()
  for (const batch of batches) {
    const last = batch.firstOffset + BigInt(batch.lastOffsetDelta)
    while (pendingAborts.length > 0 && pendingAborts[0]!.firstOffset <= last) {
      aborted.add(pendingAborts.shift()!.producerId)
    }
    const transactional = (batch.attributes & TRANSACTIONAL) !== 0
    if ((batch.attributes & CONTROL) !== 0) {
      // A transaction marker ends the producer's aborted range (also one before the position, already read).
      if (transactional) aborted.delete(batch.producerId)
    } else if (last >= next && !(transactional && aborted.has(batch.producerId))) {
      const appendTime = (batch.attributes & LOG_APPEND_TIME) !== 0
      for (const record of batch.records) {
        const offset = batch.firstOffset + BigInt(record.offsetDelta)
        if (offset < next) continue
        const headers: Array<readonly [string, Buffer | null]> = []
        for (const [k, v] of record.headers) if (k) headers.push([k.toString(), v && detached(v)])
        records.push({
          topic,
          partition,
          offset,
          // On a LogAppendTime topic the broker's append time is the batch's maxTimestamp.
          timestamp: appendTime ? batch.maxTimestamp : batch.firstTimestamp + record.timestampDelta,
          key: record.key && detached(record.key),
          value: record.value && detached(record.value),
          headers,
          fetchedAt
        })
      }
    }
    if (last >= next) next = last + 1n
  }
  // Nothing returned below the last stable offset means nothing is left to read there (only markers).
  if (batches.length === 0 && lastStableOffset > next) next = lastStableOffset
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
