import { bucketOf } from './bucket-of.ts'

/**
 * The partition of `<prefix>.contracts` that holds a dispatcher's contract: the same FNV-1a hash as the
 * resource buckets, over the dispatcher id. The scheduler leader writes a dispatcher's records there and the
 * dispatcher reads only that partition.
 */
export function contractPartitionOf(dispatcherId: string, partitions: number): number {
  return bucketOf(dispatcherId, partitions)
}
