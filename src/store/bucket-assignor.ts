/**
 * How the controllers' group shares the buckets (pure). Kafka's round-robin assignor deals the buckets out again on
 * every rebalance in the order the members joined, so the departure of any controller moved bucket 0 — and with it
 * the scheduler leadership, whose new holder must open its term and read before its first pass — and most other
 * buckets too (each move: a writer to open, writes refused until it is). Here every member keeps what it held, as
 * far as an even share allows; what is left over goes to those below their share. Bucket 0 stays with its holder
 * whenever that holder is still a member.
 */

/** What a member says it held when it joined: the buckets of its newest assignment, and that assignment's generation. */
export interface BucketClaim {
  readonly generation: number
  readonly buckets: readonly number[]
}

export interface BucketMember {
  readonly memberId: string
  /** Undefined for a member that holds nothing or whose claim could not be read. */
  readonly claim: BucketClaim | undefined
}

/**
 * Each member's buckets: every bucket of `0 … bucketCount - 1` to exactly one member, shares differing by at most
 * one. A bucket claimed by several members goes to the claim of the newest generation; claimed by several in the
 * same generation, its claims are ignored (as Kafka's sticky assignor does).
 */
export function assignBuckets(members: readonly BucketMember[], bucketCount: number): Map<string, number[]> {
  const ids = [...new Set(members.map(m => m.memberId))].sort()
  const result = new Map<string, number[]>(ids.map(id => [id, []]))
  if (ids.length === 0) return result
  const owner = claimedOwners(members, bucketCount)
  const held = new Map<string, number[]>(ids.map(id => [id, []]))
  for (let bucket = 0; bucket < bucketCount; bucket++) {
    const id = owner.get(bucket)
    if (id !== undefined) held.get(id)!.push(bucket)
  }
  // Shares: everyone gets `base`; `extra` members get one more, those holding the most first, so that as little as
  // possible moves. Bucket 0's holder keeps it: a member keeps its lowest buckets, and its share is at least one
  // whenever there are as many buckets as members (when there are fewer, every holder gets one more).
  const base = Math.floor(bucketCount / ids.length)
  let extra = bucketCount % ids.length
  const byHolding = [...ids].sort((a, b) => held.get(b)!.length - held.get(a)!.length || (a < b ? -1 : 1))
  const share = new Map<string, number>()
  for (const id of byHolding) {
    const more = extra > 0 && held.get(id)!.length > base ? 1 : 0
    extra -= more
    share.set(id, base + more)
  }
  // Extra shares nobody held enough to use go to the members in id order.
  for (const id of ids) {
    if (extra === 0) break
    if (share.get(id) === base) {
      share.set(id, base + 1)
      extra--
    }
  }
  const free: number[] = []
  for (const id of ids) {
    // A member keeps its lowest buckets up to its share.
    const kept = held.get(id)!
    result.set(id, kept.slice(0, share.get(id)))
    free.push(...kept.slice(share.get(id)))
  }
  for (let bucket = 0; bucket < bucketCount; bucket++) if (!owner.has(bucket)) free.push(bucket)
  free.sort((a, b) => a - b)
  for (const id of ids) {
    const buckets = result.get(id)!
    while (buckets.length < share.get(id)!) buckets.push(free.shift()!)
    buckets.sort((a, b) => a - b)
  }
  return result
}

/** Each bucket's owner by the members' claims: the newest generation's claim, unless two claim it in that generation. */
function claimedOwners(members: readonly BucketMember[], bucketCount: number): Map<number, string> {
  const best = new Map<number, { id: string | undefined; generation: number }>()
  for (const { memberId, claim } of members) {
    if (claim === undefined) continue
    for (const bucket of new Set(claim.buckets)) {
      if (!Number.isInteger(bucket) || bucket < 0 || bucket >= bucketCount) continue
      const current = best.get(bucket)
      if (current === undefined || claim.generation > current.generation) {
        best.set(bucket, { id: memberId, generation: claim.generation })
      } else if (claim.generation === current.generation && current.id !== memberId) {
        best.set(bucket, { id: undefined, generation: claim.generation })
      }
    }
  }
  const owners = new Map<number, string>()
  for (const [bucket, { id }] of best) if (id !== undefined) owners.set(bucket, id)
  return owners
}

/** A claim as a member sends it in its group metadata (JSON), and back; anything unreadable is no claim. */
export function encodeBucketClaim(claim: BucketClaim): Buffer {
  return Buffer.from(JSON.stringify({ generation: claim.generation, buckets: claim.buckets }))
}

export function decodeBucketClaim(data: Buffer | string | undefined | null): BucketClaim | undefined {
  if (data === undefined || data === null || data.length === 0) return undefined
  try {
    const value: unknown = JSON.parse(typeof data === 'string' ? data : data.toString('utf8'))
    if (typeof value !== 'object' || value === null) return undefined
    const { generation, buckets } = value as { generation?: unknown; buckets?: unknown }
    if (!Number.isInteger(generation) || !Array.isArray(buckets) || !buckets.every(b => Number.isInteger(b))) {
      return undefined
    }
    return { generation: generation as number, buckets: buckets as number[] }
  } catch {
    return undefined
  }
}
