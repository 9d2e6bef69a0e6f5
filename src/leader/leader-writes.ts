import type { PendingInfo, Placement } from '../scheduler/index.ts'
import { contractKey } from '../store/index.ts'
import type { ContractRecord, MovedFrom, PlacementsRecord, ScaleRecord, SlotKind, StoredEntry } from '../store/index.ts'

/** One record the leader appends: a source's placements, or one dispatcher's contract for it; null is a tombstone. */
export type LeaderWrite =
  | { readonly kind: 'placements'; readonly key: string; readonly record: PlacementsRecord | null }
  | {
      readonly kind: 'contract'
      readonly dispatcher: string
      readonly key: string
      readonly record: ContractRecord | null
    }

/** What the leader knows when it writes the sources in `keys`: the log, the store and the scheduler's result. */
export interface LeaderWritesInput {
  readonly keys: Iterable<string>
  /** The placements record per source and the contract record per (dispatcher, source), as the log holds them. */
  readonly placements: ReadonlyMap<string, PlacementsRecord>
  readonly contracts: ReadonlyMap<string, ContractRecord>
  /** The scale each source was last given to the scheduler, and by whom. */
  readonly scales: ReadonlyMap<string, ScaleRecord>
  readonly epoch: number
  readonly revision: number
  /** An ISO-8601 time: when a pending state starts, when a dispatcher left a schedule. */
  readonly now: string
  /** A source as stored; undefined once it is deleted. */
  entry(key: string): StoredEntry | undefined
  /** The scheduler's placements and pending vreplicas of a source. */
  placed(key: string): readonly Placement[] | undefined
  pending(key: string): PendingInfo | undefined
  /** The highest incarnation of a dispatcher ever seen, live or not. */
  incarnation(dispatcher: string): number | undefined
}

/**
 * What to append so the log says what the scheduler now has for `keys`: a placements record when it changed, a
 * contract for every holder whose vreplicas or resourceVersion moved, and tombstones for what is gone. A schedule
 * that changes hands carries the chain of the dispatchers it left (`movedFrom`), so its new owner goes on from
 * their watermarks. Pure: the leader appends the result in one transaction.
 */
export function leaderWrites(input: LeaderWritesInput): LeaderWrite[] {
  const writes: LeaderWrite[] = []
  for (const key of input.keys) writes.push(...writesOf(input, key))
  return writes
}

function writesOf(input: LeaderWritesInput, key: string): LeaderWrite[] {
  const writes: LeaderWrite[] = []
  const entry = input.entry(key)
  const before = input.placements.get(key)
  const oldContracts = new Map((before?.placements ?? []).map(p => [p.podName, p.vreplicas]))
  if (!entry) {
    if (before) writes.push({ kind: 'placements', key, record: null })
    for (const dispatcher of oldContracts.keys()) writes.push(tombstone(dispatcher, key))
    return writes
  }
  const slot: SlotKind = entry.object.kind === 'KafkaSource' ? 'consumer' : 'schedule'
  const placements = input.placed(key) ?? []
  const pending = input.pending(key)
  // A schedule that changes hands names the dispatchers it leaves: its new owner goes on from their watermarks.
  // One left with nowhere to go (pending) keeps them in its placements record for the owner it gets later.
  const left = [...oldContracts.keys()].filter(d => !placements.some(p => p.podName === d))
  const chain =
    slot !== 'schedule'
      ? []
      : left.length > 0
        ? movedChain(
            left.map(d => leaving(input, d, key)),
            d => input.contracts.get(contractKey(d, key))?.movedFrom
          )
        : oldContracts.size === 0
          ? (before?.left ?? [])
          : []
  const scale = input.scales.get(key)
  const record: PlacementsRecord = {
    source: key,
    slot,
    placements: placements.map(p => ({ podName: p.podName, vreplicas: p.vreplicas })),
    pending: pending?.count ?? 0,
    ...(pending && pending.count > 0 ? { reason: pending.reason, message: pending.message } : {}),
    epoch: input.epoch,
    revision: input.revision,
    since: before && before.pending > 0 === (pending?.count ?? 0) > 0 ? before.since : input.now,
    ...(scale === undefined ? {} : { scale }),
    ...(placements.length === 0 && chain.length > 0 ? { left: chain } : {})
  }
  if (!before || !samePlacements(before, record) || (record.left !== undefined) !== (before.left !== undefined)) {
    writes.push({ kind: 'placements', key, record })
  }
  for (const p of placements) {
    const current = input.contracts.get(contractKey(p.podName, key))
    if (current?.vreplicas === p.vreplicas && current.resourceVersion === entry.resourceVersion) continue
    // A new holder gets the chain; a holder's own contract rewritten (a new resourceVersion) keeps it.
    const movedFrom = slot !== 'schedule' ? undefined : !oldContracts.has(p.podName) ? chain : current?.movedFrom
    const contract: ContractRecord = {
      dispatcher: p.podName,
      source: key,
      slot,
      vreplicas: p.vreplicas,
      resourceVersion: entry.resourceVersion,
      epoch: input.epoch,
      ...(movedFrom && movedFrom.length > 0 ? { movedFrom } : {}),
      ...(current?.heldSince === undefined ? {} : { heldSince: current.heldSince })
    }
    writes.push({ kind: 'contract', dispatcher: p.podName, key: contractKey(p.podName, key), record: contract })
  }
  for (const dispatcher of left) writes.push(tombstone(dispatcher, key))
  return writes
}

// A dispatcher a schedule leaves now: the offset that had given it the schedule and its incarnation, so its
// next owner knows which of its heartbeats speak for the schedule.
function leaving(input: LeaderWritesInput, dispatcher: string, key: string): MovedFrom {
  const heldSince = input.contracts.get(contractKey(dispatcher, key))?.heldSince
  const incarnation = input.incarnation(dispatcher)
  return {
    dispatcher,
    at: input.now,
    ...(heldSince === undefined ? {} : { offset: heldSince }),
    ...(incarnation === undefined ? {} : { incarnation })
  }
}

function tombstone(dispatcher: string, source: string): LeaderWrite {
  return { kind: 'contract', dispatcher, key: contractKey(dispatcher, source), record: null }
}

/** At most this many dispatchers a schedule left are carried in its contract. */
const MOVED_CHAIN = 8

/**
 * The dispatchers a schedule leaves now (`left`), then those each of them had got it from: a dispatcher that
 * never started the schedule knows nothing of it, so its predecessors must travel on. Newest first, one entry
 * per holding (dispatcher and the offset that gave it the schedule).
 */
export function movedChain(
  left: readonly MovedFrom[],
  previous: (dispatcher: string) => readonly MovedFrom[] | undefined
): MovedFrom[] {
  const chain: MovedFrom[] = [...left]
  for (const { dispatcher } of left) {
    for (const earlier of previous(dispatcher) ?? []) {
      // Once per holding: a dispatcher that had it twice (it came back) is named for each, as its heartbeats
      // from the first holding speak for the schedule even when it never stopped it in between.
      if (!chain.some(m => m.dispatcher === earlier.dispatcher && m.offset === earlier.offset)) chain.push(earlier)
    }
  }
  return chain.slice(0, MOVED_CHAIN)
}

function samePlacements(a: PlacementsRecord, b: PlacementsRecord): boolean {
  return (
    a.pending === b.pending &&
    a.scale?.desired === b.scale?.desired &&
    a.scale?.by === b.scale?.by &&
    a.scale?.held === b.scale?.held &&
    a.reason === b.reason &&
    a.placements.length === b.placements.length &&
    a.placements.every((p, i) => p.podName === b.placements[i]?.podName && p.vreplicas === b.placements[i]?.vreplicas)
  )
}
