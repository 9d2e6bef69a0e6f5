// Partitions a stable group assigns to nobody, and when the group's leader repairs that (pure; see GroupMembership).
//
// Cooperative rebalancing (KIP-429) moves a partition in two rounds: the first takes it from its owner and gives it
// to nobody, the owner rejoins once it has let it go, and the second round gives it to its new owner. The second
// round is owed by the owner's rejoin alone. A static member closed without LeaveGroup between the two rounds (a
// dispatcher fenced, a spec change, a process restart) never sends it, and the member that comes back under its
// instance id replaces it in the stable group without a rebalance: it is handed the assignment stored for its
// instance, and the partition stays with nobody for good — the group is Stable, its lag grows, nothing delivers it.
// Nothing in the protocol notices; the leader does, by asking the coordinator what each member holds.

/** A consumer group as the coordinator describes it: its state and what each member was assigned. */
export interface GroupAssignmentView {
  /** The coordinator's state name (`Stable`, `PreparingRebalance`, `CompletingRebalance`, `Empty`, `Dead`). */
  readonly state: string
  readonly members: ReadonlyArray<{
    /** The member id the coordinator gave it (hand-overs are bound to it: see `partition-handover.ts`). */
    readonly memberId?: string
    readonly assigned: ReadonlyArray<{ readonly topic: string; readonly partitions: readonly number[] }>
  }>
}

/**
 * The partitions (`topic/partition`) of the given topics that no member of a stable group holds; none while the
 * group is rebalancing or empty (a rebalance in progress will assign them, an empty group has nobody to).
 */
export function strandedPartitions(view: GroupAssignmentView, partitionCounts: ReadonlyMap<string, number>): string[] {
  if (view.state !== 'Stable' || view.members.length === 0) return []
  const held = new Set<string>()
  for (const member of view.members) {
    for (const { topic, partitions } of member.assigned) for (const p of partitions) held.add(`${topic}/${p}`)
  }
  const stranded: string[] = []
  for (const [topic, count] of partitionCounts) {
    for (let p = 0; p < count; p++) if (!held.has(`${topic}/${p}`)) stranded.push(`${topic}/${p}`)
  }
  return stranded
}

export type StrandedVerdict = 'none' | 'confirm' | 'repair'

/**
 * Tells a stranding from the first round of a cooperative move: between that round and the owner's rejoin the
 * group is Stable with the moving partitions held by nobody, for the few milliseconds the rejoin takes. A
 * partition is stranded when it is held by nobody in two looks at the same generation of the leader: `confirm`
 * asks for the second look soon, `repair` says the leader should rejoin (which makes the coordinator rebalance).
 */
export class StrandedWatch {
  #seen: { readonly generation: number; readonly partitions: ReadonlySet<string> } | undefined
  #repairs = 0

  /** Repairs decided so far. */
  get repairs(): number {
    return this.#repairs
  }

  /** Whether a first look found partitions held by nobody and waits for its second. */
  get confirming(): boolean {
    return this.#seen !== undefined
  }

  /** One look at the group: the leader's generation then, and the partitions it found held by nobody. */
  observe(generation: number, stranded: readonly string[]): StrandedVerdict {
    const before = this.#seen
    if (stranded.length === 0) {
      this.#seen = undefined
      return 'none'
    }
    if (before !== undefined && before.generation === generation && stranded.some(p => before.partitions.has(p))) {
      this.#seen = undefined
      this.#repairs++
      return 'repair'
    }
    this.#seen = { generation, partitions: new Set(stranded) }
    return 'confirm'
  }
}
