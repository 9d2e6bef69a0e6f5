import type { GroupPartitionsAssigner, GroupPartitionsAssignments } from '@platformatic/kafka'

// The partition assignment a source's group leader computes (classic protocol, cooperative, KIP-429): balanced —
// no member holds two partitions more than another — sticky, and never handing a partition to a new member while
// its current owner still holds it. The client library's own cooperative-sticky assignor broke both promises: it
// moved partitions only from members above ceil(P/M) to members below floor(P/M), so a member joining a group
// already at ceil got nothing and no later round fixed it (members holding no partition); and it ignored every
// claim of a member one generation behind, so that member's partitions went straight to someone else while it
// still delivered them (two owners at once).

/** A member as the leader sees it in a JoinGroup answer: what it subscribes to and what it owns now. */
export interface MemberClaim {
  readonly memberId: string
  readonly topics: readonly string[]
  /** Partitions it owns, per topic (from its subscription's ownedPartitions). */
  readonly owned: ReadonlyArray<{ readonly topic: string; readonly partitions: readonly number[] }>
  /** The generation it owned them in (-1: none). */
  readonly generation: number
}

const keyOf = (topic: string, partition: number): string => `${topic}\u0000${partition}`

/**
 * Each member's partitions for this round (member id → `topic\0partition` keys). The target is balanced: the P
 * partitions split so that every member holds ⌊P/M⌋ or ⌈P/M⌉, members keep what they own up to their share, and
 * what is left goes to the least loaded. A partition whose target is another member than its current owner is
 * given to nobody this round: its owner sees it gone (revokes it) and rejoins, and the next round, with no owner
 * left, gives it to its target — so a partition never has two owners at once.
 *
 * Ownership: the claim of the highest generation wins; an older claim stands only when nobody newer claims the
 * partition (its owner still holds it).
 */
export function assignPartitions(
  members: readonly MemberClaim[],
  partitionCounts: ReadonlyMap<string, number>
): Map<string, string[]> {
  const ids = [...members].map(m => m.memberId).sort()
  const byId = new Map(members.map(m => [m.memberId, m]))
  const result = new Map<string, string[]>(ids.map(id => [id, []]))
  if (ids.length === 0) return result
  // Every partition of a topic some member subscribes to, with the members that may own it.
  const eligible = new Map<string, string[]>()
  for (const [topic, count] of [...partitionCounts].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    const subscribers = ids.filter(id => byId.get(id)!.topics.includes(topic))
    if (subscribers.length === 0) continue
    for (let p = 0; p < count; p++) eligible.set(keyOf(topic, p), subscribers)
  }
  // Current owners.
  const owner = new Map<string, { id: string; generation: number }>()
  for (const id of ids) {
    const member = byId.get(id)!
    for (const { topic, partitions } of member.owned) {
      for (const p of partitions) {
        const key = keyOf(topic, p)
        if (!eligible.get(key)?.includes(id)) continue
        const other = owner.get(key)
        if (other === undefined || member.generation > other.generation)
          owner.set(key, { id, generation: member.generation })
      }
    }
  }
  // Shares: ⌊P/M⌋ each, one more for P mod M of them — those owning the most first, so fewest partitions move.
  const total = eligible.size
  const base = Math.floor(total / ids.length)
  const extra = total % ids.length
  const ownedBy = new Map<string, string[]>(ids.map(id => [id, []]))
  for (const [key, { id }] of owner) ownedBy.get(id)!.push(key)
  const quota = new Map<string, number>()
  const byOwned = [...ids].sort((a, b) => ownedBy.get(b)!.length - ownedBy.get(a)!.length || (a < b ? -1 : 1))
  byOwned.forEach((id, i) => quota.set(id, base + (i < extra ? 1 : 0)))
  // Target: keep owned partitions up to the share, then hand out the rest to the least loaded.
  const target = new Map<string, string>()
  const load = new Map<string, number>(ids.map(id => [id, 0]))
  for (const id of ids) {
    for (const key of ownedBy.get(id)!.sort()) {
      if (load.get(id)! >= quota.get(id)!) break
      target.set(key, id)
      load.set(id, load.get(id)! + 1)
    }
  }
  for (const [key, candidates] of eligible) {
    if (target.has(key)) continue
    const under = candidates.filter(id => load.get(id)! < quota.get(id)!)
    const pool = under.length > 0 ? under : candidates
    let best = pool[0]!
    for (const id of pool) if (load.get(id)! < load.get(best)!) best = id
    target.set(key, best)
    load.set(best, load.get(best)! + 1)
  }
  // This round: a partition moving away from a current owner goes to nobody until that owner let it go.
  for (const [key, id] of target) {
    const current = owner.get(key)?.id
    if (current !== undefined && current !== id) continue
    result.get(id)!.push(key)
  }
  for (const keys of result.values()) keys.sort()
  return result
}

/** The client's assigner hook over `assignPartitions`. */
export const balancedCooperativeAssigner: GroupPartitionsAssigner = (_current, members, _leaderTopics, metadata) => {
  // Every topic some member subscribes to (the client passes the leader's own subscription only; members of one
  // group may differ while a source's topics change, or when two sources share a consumer group).
  const topics = new Set([...members.values()].flatMap(m => m.topics ?? []).filter(t => metadata.topics.has(t)))
  const claims: MemberClaim[] = [...members.values()].map(m => ({
    memberId: m.memberId,
    topics: (m.topics ?? []).filter(t => topics.has(t)),
    owned: (m.ownedPartitions ?? []).map(o => ({ topic: o.topic, partitions: o.partitions })),
    generation: m.generationId ?? -1
  }))
  const counts = new Map<string, number>()
  for (const topic of topics) {
    const count = metadata.topics.get(topic)?.partitionsCount
    if (count !== undefined) counts.set(topic, count)
  }
  const assigned = assignPartitions(claims, counts)
  const out: GroupPartitionsAssignments[] = []
  for (const [memberId, keys] of assigned) {
    const byTopic = new Map<string, { topic: string; partitions: number[] }>()
    for (const key of keys) {
      const cut = key.lastIndexOf('\u0000')
      const topic = key.slice(0, cut)
      const entry = byTopic.get(topic) ?? { topic, partitions: [] }
      entry.partitions.push(Number(key.slice(cut + 1)))
      byTopic.set(topic, entry)
    }
    for (const entry of byTopic.values()) entry.partitions.sort((a, b) => a - b)
    out.push({ memberId, assignments: byTopic })
  }
  return out
}
