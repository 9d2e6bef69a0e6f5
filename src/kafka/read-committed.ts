// read_committed, done on the client side: the one filter both of Shoal's readers of the Kafka log use (a
// KafkaSource's group member and the store's LogTailer).

// Record batch attribute bits (Kafka protocol, RecordBatch.attributes).
const LOG_APPEND_TIME = 0x08
const TRANSACTIONAL = 0x10
const CONTROL = 0x20

/** One record of a fetched batch, as the client library decodes it. */
export interface FetchedRecord {
  readonly offsetDelta: number
  readonly timestampDelta: bigint
  readonly key: Buffer | null
  readonly value: Buffer | null
  readonly headers: ReadonlyArray<readonly [Buffer | null, Buffer | null]>
}

/** The parts of a fetched record batch this reads (the client's RecordsBatch has them). */
export interface FetchedBatch {
  readonly firstOffset: bigint
  readonly lastOffsetDelta: number
  readonly attributes: number
  readonly producerId: bigint
  readonly firstTimestamp: bigint
  readonly maxTimestamp: bigint
  readonly records: readonly FetchedRecord[]
}

export interface AbortedTransaction {
  readonly producerId: bigint
  readonly firstOffset: bigint
}

/** What one fetch may return: Kafka's fetch.max.bytes and max.partition.fetch.bytes. */
export interface FetchLimits {
  /** Bytes in all (the first batch of the first partition with data still comes whole). */
  readonly maxBytes: number
  /** Bytes for one partition (ditto). */
  readonly partitionMaxBytes: number
}

/** Called for each committed record at or after the position, in offset order. */
export type CommittedRecordVisitor = (record: FetchedRecord, offset: bigint, timestamp: bigint) => void

/**
 * Visits the committed records of one partition's fetch answer at and after `position`, and returns where the
 * next fetch of the partition starts: just past the last batch the answer holds (markers and aborted batches
 * too), or `position` itself when it holds none.
 *
 * The broker returns data up to the last stable offset but leaves dropping aborted transactions to the client;
 * the client library drops an aborted range only when its marker is in the same answer, so this tracks the
 * answer's aborted-transaction list itself (as Kafka's Java consumer does): a producer's transactional batches
 * are skipped from its aborted transaction's first offset to its next marker, a marker before the position
 * included.
 *
 * An answer without a batch says nothing about the log: the broker answers a partition with an empty (or
 * truncated) record set while it has data when the partition's first batch does not fit the request's
 * per-partition limit and the partition is not the first with data in the answer (KIP-74), or when the answer's
 * total limit is used up. So the position moves only past batches actually returned — never to the last stable
 * offset or the high watermark the answer reports.
 */
export function readCommitted(
  batches: readonly FetchedBatch[],
  abortedTransactions: readonly AbortedTransaction[],
  position: bigint,
  visit: CommittedRecordVisitor
): bigint {
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
      // On a LogAppendTime topic the broker's append time is the batch's maxTimestamp.
      const appendTime = (batch.attributes & LOG_APPEND_TIME) !== 0
      for (const record of batch.records) {
        const offset = batch.firstOffset + BigInt(record.offsetDelta)
        if (offset < next) continue
        visit(record, offset, appendTime ? batch.maxTimestamp : batch.firstTimestamp + record.timestampDelta)
      }
    }
    if (last >= next) next = last + 1n
  }
  return next
}

/**
 * The order to ask a broker for partitions in. A broker fills an answer in request order and returns a first
 * batch larger than the limits only for the first partition with data (KIP-74), so a partition always asked
 * late behind busy ones could wait for ever. Partitions whose last answer was empty while data waited
 * (`starved`) go first; the rest rotate by `round`, so every partition is first in its turn.
 */
export function fetchOrder<T>(items: readonly T[], round: number, starved: (item: T) => boolean): T[] {
  const n = items.length
  if (n <= 1) return [...items]
  const start = ((round % n) + n) % n
  const rotated = [...items.slice(start), ...items.slice(0, start)]
  return [...rotated.filter(starved), ...rotated.filter(item => !starved(item))]
}
