import { performance } from 'node:perf_hooks'
import type { MemberRecord, MemberUpdate } from '../store/index.ts'
import { RemoteClock } from '../util/index.ts'
import { DEFAULT_LIVENESS_TIMEOUT_MS, checkLivenessTimeout } from './liveness.ts'
import { checkMemberRecord } from './record-shapes.ts'

/**
 * - `alive`: its last heartbeat is within the liveness timeout of now (broker time);
 * - `unconfirmed`: it is not, but this view has not read for one liveness timeout yet, so it may not judge;
 * - `dead`: it is not, and the view has waited long enough to say so.
 */
export type MemberState = 'alive' | 'unconfirmed' | 'dead'

/** A dispatcher as its newest heartbeat shows it, and whether it is alive. */
export interface MemberStatus extends MemberRecord {
  /** Broker append time of its newest heartbeat, milliseconds since the epoch. */
  readonly lastSeen: number
  readonly state: MemberState
}

export type MemberApply =
  | { readonly kind: 'changed' }
  | { readonly kind: 'ignored'; readonly reason: string }
  | { readonly kind: 'invalid'; readonly reason: string }

export interface MembersViewOptions {
  readonly livenessTimeoutMs?: number
  /** A monotonic clock in milliseconds (default `performance.now`); tests pass their own. */
  readonly clock?: () => number
}

interface Known {
  readonly record: MemberRecord
  readonly lastSeen: number
}

/**
 * The controllers' view of the dispatchers (pure: records in, answers out). Liveness is judged on the
 * broker's clock, never the local one: "now" is the newest append time seen on the topic plus the local
 * monotonic time elapsed since it was seen, so a controller whose wall clock is skewed judges as well as
 * any other. A view that has just started reading has not yet seen the heartbeats that are on their way,
 * so it declares nobody dead before it has read for one liveness timeout (`readySince`).
 */
export class MembersView {
  readonly livenessTimeoutMs: number
  readonly #clock: () => number
  readonly #members = new Map<string, Known>()
  /** Highest incarnation ever seen per id, kept after a tombstone so a late older heartbeat cannot return. */
  readonly #incarnations = new Map<string, number>()
  readonly #startedAt: number
  readonly #broker: RemoteClock

  constructor(options: MembersViewOptions = {}) {
    this.livenessTimeoutMs = options.livenessTimeoutMs ?? DEFAULT_LIVENESS_TIMEOUT_MS
    checkLivenessTimeout(this.livenessTimeoutMs)
    this.#clock = options.clock ?? (() => performance.now())
    this.#startedAt = this.#clock()
    this.#broker = new RemoteClock(this.#clock)
  }

  /** Local monotonic time from which this view may declare a member dead: one liveness timeout after it started reading. */
  get readySince(): number {
    return this.#startedAt + this.livenessTimeoutMs
  }

  /** Whether this view has read long enough to declare members dead. */
  isReady(): boolean {
    return this.#clock() >= this.readySince
  }

  apply(update: MemberUpdate): MemberApply {
    this.#broker.observe(update.appendTimeMs)
    const highest = this.#incarnations.get(update.id)
    if (update.value === 'tombstone') {
      if (update.tombstoneIncarnation !== undefined && highest !== undefined && update.tombstoneIncarnation < highest) {
        return { kind: 'ignored', reason: `tombstone of incarnation ${update.tombstoneIncarnation} < ${highest}` }
      }
      if (update.tombstoneIncarnation !== undefined && update.tombstoneIncarnation > (highest ?? -1)) {
        this.#incarnations.set(update.id, update.tombstoneIncarnation)
      }
      return this.#members.delete(update.id) ? { kind: 'changed' } : { kind: 'ignored', reason: 'not a member' }
    }
    const checked = checkMemberRecord(update.value)
    if (checked.kind === 'invalid') return checked
    const record = checked.record
    if (record.id !== update.id) return { kind: 'invalid', reason: `record of ${record.id} under key ${update.id}` }
    if (highest !== undefined && record.incarnation < highest) {
      return { kind: 'ignored', reason: `incarnation ${record.incarnation} < ${highest}` }
    }
    this.#incarnations.set(update.id, record.incarnation)
    this.#members.set(update.id, { record: Object.freeze({ ...record }), lastSeen: update.appendTimeMs })
    return { kind: 'changed' }
  }

  /** Now on the broker's clock, as far as this view can tell; undefined before the first record. */
  brokerNow(): number | undefined {
    return this.#broker.now()
  }

  /** The highest incarnation seen for an id, even if it left since. */
  highestIncarnation(id: string): number | undefined {
    return this.#incarnations.get(id)
  }

  member(id: string, nowBrokerMs: number | undefined = this.brokerNow()): MemberStatus | undefined {
    const known = this.#members.get(id)
    return known && this.#status(known, nowBrokerMs, this.isReady())
  }

  /** Every member that has not left (tombstone), dead or alive, by ordinal then id. */
  members(nowBrokerMs: number | undefined = this.brokerNow()): MemberStatus[] {
    const ready = this.isReady()
    return [...this.#members.values()].map(known => this.#status(known, nowBrokerMs, ready)).sort(byOrdinal)
  }

  /** The members nobody may consider dead yet (`alive` or `unconfirmed`), by ordinal then id. */
  liveDispatchers(nowBrokerMs: number | undefined = this.brokerNow()): MemberStatus[] {
    return this.members(nowBrokerMs).filter(m => m.state !== 'dead')
  }

  #status(known: Known, nowBrokerMs: number | undefined, ready: boolean): MemberStatus {
    const fresh = nowBrokerMs === undefined || nowBrokerMs - known.lastSeen <= this.livenessTimeoutMs
    const state: MemberState = fresh ? 'alive' : ready ? 'dead' : 'unconfirmed'
    return { ...known.record, lastSeen: known.lastSeen, state }
  }
}

function byOrdinal(a: MemberStatus, b: MemberStatus): number {
  return a.ordinal - b.ordinal || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)
}
