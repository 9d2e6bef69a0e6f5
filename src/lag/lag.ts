// Consumer lag of a source's group: the pure arithmetic, tested without Kafka.

/**
 * The one definition of a partition's lag: records from `from` (the group's committed offset, or where the
 * source's initialOffset starts a group that has none) to the last stable offset, the end of what a read_committed
 * consumer can read; never below 0 (a committed offset past the last stable offset, seen while a transaction is
 * open, is no negative lag).
 */
export function lagBetween(from: bigint, lastStable: bigint): bigint {
  return lastStable > from ? lastStable - from : 0n
}

/** One source's lag at one moment, summed over its partitions. */
export interface LagFigures {
  /** Records between each partition's `from` and its end (last stable offset): see `lagBetween`. */
  readonly lag: number
  /**
   * Sum of the partitions' committed offsets, of those with a commit only: its growth is the consumed
   * throughput. (Where initialOffset starts a group moves with the log, and is no consumption.)
   */
  readonly committed: number
  /** Partitions with a committed offset: `committed` of two samples compares only when they have the same. */
  readonly committedPartitions: number
  /** Sum of the partitions' end offsets: its growth is the topics' produced throughput. */
  readonly end: number
  /** Partitions counted: every partition of the source's topics. */
  readonly partitions: number
}

/** A partition as `lagFigures` sums it (the lag reader's PartitionLag has these fields). */
export interface PartitionFigures {
  /** The group's committed offset; undefined when it has none. */
  readonly committed: bigint | undefined
  readonly from: bigint
  readonly lastStable: bigint
  readonly lag: bigint
}

/** A source's figures: its partitions' lag, commits and ends, summed. */
export function lagFigures(partitions: readonly PartitionFigures[]): LagFigures {
  let lag = 0
  let committed = 0
  let committedPartitions = 0
  let end = 0
  for (const p of partitions) {
    lag += Number(p.lag)
    if (p.committed !== undefined) {
      committed += Number(p.committed)
      committedPartitions++
    }
    end += Number(p.lastStable)
  }
  return { lag, committed, committedPartitions, end, partitions: partitions.length }
}

/** A source's figures at a time, as the lag monitor keeps them. */
export interface LagSample extends LagFigures {
  readonly at: number
}

/**
 * Records per second between two samples of one source: consumed (committed) and produced (end). Consumed is 0
 * when a partition got its first commit between them: its whole offset would otherwise count as consumed then.
 */
export function ratesBetween(
  before: LagSample,
  after: LagSample
): { readonly consumedPerSec: number; readonly producedPerSec: number } {
  const seconds = (after.at - before.at) / 1000
  if (seconds <= 0) return { consumedPerSec: 0, producedPerSec: 0 }
  return {
    consumedPerSec:
      after.committedPartitions === before.committedPartitions
        ? Math.max(0, (after.committed - before.committed) / seconds)
        : 0,
    producedPerSec: Math.max(0, (after.end - before.end) / seconds)
  }
}
