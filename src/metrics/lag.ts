// Consumer lag of a source's group: the pure arithmetic, tested without Kafka.

/** `topic:partition`, the key of the offset maps below. */
export function partitionKey(topic: string, partition: number): string {
  return `${topic}:${partition}`
}

/** One source's lag at one moment, summed over its partitions. */
export interface LagFigures {
  /** Records between the group's committed offsets and the end (last stable offset) of each partition. */
  readonly lag: number
  /** Sum of the committed offsets: its growth over time is the source's consumed throughput. */
  readonly committed: number
  /** Sum of the partitions' end offsets: its growth is the topics' produced throughput. */
  readonly end: number
  /** Partitions counted; those the group never committed are left out (their lag is unknown). */
  readonly partitions: number
}

/**
 * Lag of a group over some partitions: per partition end − committed, never below 0 (a committed offset past the
 * last stable offset, seen while a transaction is open, is no negative lag). Partitions without a committed offset
 * are not counted; Shoal commits a source's initial offsets when it is created, so they are rare.
 */
export function lagOf(
  ends: ReadonlyMap<string, bigint>,
  committed: ReadonlyMap<string, bigint>,
  partitions: Iterable<string>
): LagFigures {
  let lag = 0
  let committedSum = 0
  let endSum = 0
  let counted = 0
  for (const key of partitions) {
    const end = ends.get(key)
    const offset = committed.get(key)
    if (end === undefined || offset === undefined || offset < 0n) continue
    counted++
    endSum += Number(end)
    committedSum += Number(offset)
    if (end > offset) lag += Number(end - offset)
  }
  return { lag, committed: committedSum, end: endSum, partitions: counted }
}

/** A source's figures at a time, as the lag monitor keeps them. */
export interface LagSample extends LagFigures {
  readonly at: number
}

/** Records per second between two samples of one source: consumed (committed) and produced (end). */
export function ratesBetween(
  before: LagSample,
  after: LagSample
): { readonly consumedPerSec: number; readonly producedPerSec: number } {
  const seconds = (after.at - before.at) / 1000
  if (seconds <= 0) return { consumedPerSec: 0, producedPerSec: 0 }
  return {
    consumedPerSec: Math.max(0, (after.committed - before.committed) / seconds),
    producedPerSec: Math.max(0, (after.end - before.end) / seconds)
  }
}
