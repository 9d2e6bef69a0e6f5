import type { ContractRecord, SlotKind } from '../store/index.ts'
import { checkContractRecord } from './record-shapes.ts'

/** What applying one record of the contracts partition did. */
export type ContractApply =
  { readonly kind: 'changed' } | { readonly kind: 'unchanged' } | { readonly kind: 'skipped'; readonly reason: string }

/** A schedule placement that went: its source and the contract offset that had given it. */
export interface EndedHolding {
  readonly source: string
  readonly heldSince: string
}

/** One record of a dispatcher's contracts partition, as decoded from the log. */
export interface ContractEntry {
  readonly offset: bigint
  readonly key: string
  /** The decoded value, or `tombstone` when the placement went. */
  readonly value: unknown
}

/**
 * A dispatcher's contract, built from its partition of `<prefix>.contracts` (pure: no I/O). The partition
 * holds the contracts of every dispatcher that hashes to it; this keeps only keys `<id>/…`, by source key.
 */
export class ContractState {
  readonly #prefix: string
  readonly #dispatcherId: string
  readonly #entries = new Map<string, ContractRecord>()
  // Placements that went since the last takeEnded(): a holding given and taken between two reads of the
  // contract must still be named as ended (a PingSource's next owner asks for it).
  #ended: EndedHolding[] = []
  #offset = -1n

  constructor(dispatcherId: string) {
    this.#dispatcherId = dispatcherId
    this.#prefix = `${dispatcherId}/`
  }

  /** Source key (`Kind/namespace/name`) → this dispatcher's placement of it. */
  get entries(): ReadonlyMap<string, ContractRecord> {
    return this.#entries
  }

  /** The highest offset of the partition applied so far (every record, this dispatcher's or not); -1 before any. */
  get offset(): bigint {
    return this.#offset
  }

  apply(entry: ContractEntry): ContractApply {
    if (entry.offset > this.#offset) this.#offset = entry.offset
    if (!entry.key.startsWith(this.#prefix)) return { kind: 'unchanged' }
    const source = entry.key.slice(this.#prefix.length)
    if (entry.value === 'tombstone') {
      const gone = this.#entries.get(source)
      if (gone === undefined) return { kind: 'unchanged' }
      this.#entries.delete(source)
      if (gone.slot === 'schedule') this.#ended.push({ source, heldSince: gone.heldSince ?? String(entry.offset) })
      return { kind: 'changed' }
    }
    const checked = checkContractRecord(entry.value)
    if (checked.kind === 'invalid') return { kind: 'skipped', reason: checked.reason }
    const record = checked.record
    if (record.dispatcher !== this.#dispatcherId || record.source !== source) {
      return { kind: 'skipped', reason: `record for ${record.dispatcher}/${record.source} under key ${entry.key}` }
    }
    const previous = this.#entries.get(source)
    // Kept for every placement (100,000 schedules on one dispatcher): the strings every record repeats are this
    // state's own, not a copy per record from its JSON. `heldSince` is always set here: the offset of the
    // record that gave this dispatcher the source (its own, on the first one).
    this.#entries.set(
      source,
      Object.freeze({
        ...record,
        dispatcher: this.#dispatcherId,
        source,
        slot: record.slot === 'consumer' ? 'consumer' : 'schedule',
        heldSince: previous?.heldSince ?? record.heldSince ?? String(entry.offset)
      })
    )
    return previous !== undefined && sameContract(previous, record) ? { kind: 'unchanged' } : { kind: 'changed' }
  }

  /** The schedule placements that went since the last call (oldest first), each with the offset that gave it. */
  takeEnded(): EndedHolding[] {
    const ended = this.#ended
    this.#ended = []
    return ended
  }

  /** Slots the contract takes, per kind: the sum of its vreplicas. */
  used(): Record<'consumers' | 'schedules', number> {
    const used = { consumers: 0, schedules: 0 }
    for (const record of this.#entries.values()) used[slotField[record.slot]] += record.vreplicas
    return used
  }
}

const slotField: Readonly<Record<SlotKind, 'consumers' | 'schedules'>> = {
  consumer: 'consumers',
  schedule: 'schedules'
}

function sameContract(a: ContractRecord, b: ContractRecord): boolean {
  return (
    a.slot === b.slot && a.vreplicas === b.vreplicas && a.resourceVersion === b.resourceVersion && a.epoch === b.epoch
  )
}
