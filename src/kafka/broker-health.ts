/**
 * Which brokers look gone, from what this process's Kafka connections saw: a broker that left a request
 * unanswered for SUSPECT_AFTER_MS, and has answered nothing since that request was sent, is suspect. A
 * black-holed broker (a zone lost or cut off: no refusal, no reset) shows exactly that, long before the request
 * times out. Pure: the caller says what was sent and answered, and when.
 */

/** An unanswered request this old makes its broker suspect (a fetch waits at most 500 ms at the broker). */
export const SUSPECT_AFTER_MS = 2_000
/** A request unanswered this long is forgotten (it timed out long ago); its broker is given another chance. */
export const FORGET_AFTER_MS = 60_000
/**
 * An acks=all Produce (0) may rightly wait at the broker for the in-sync replicas: a follower that died holds it until
 * it leaves the ISR, within 1.5 × `replica.lag.time.max.ms` (under 3 s with the settings Shoal needs,
 * docs/kafka.md). So may every request the broker answers only once its own write to an internal topic is
 * replicated: OffsetCommit (8, `__consumer_offsets`), InitProducerId (22), AddPartitionsToTxn (24),
 * AddOffsetsToTxn (25), EndTxn (26) and TxnOffsetCommit (28) (`__transaction_state`, `__consumer_offsets`). One
 * unanswered this long makes its broker suspect.
 */
export const PRODUCE_SUSPECT_AFTER_MS = 4_000
const REPLICATED_WRITE_API_KEYS: ReadonlySet<number> = new Set([0, 8, 22, 24, 25, 26, 28])
/** Requests a broker may rightly hold for as long as the group needs: JoinGroup (11) and SyncGroup (14). */
const LONG_HELD_API_KEYS: ReadonlySet<number> = new Set([11, 14])

interface BrokerState {
  /** Requests sent and not answered: request → when it was sent, and how long it may go unanswered. */
  readonly unanswered: Map<object, { readonly sentAt: number; readonly patience: number }>
  lastAnswerAt: number
}

export class BrokerHealth {
  readonly #brokers = new Map<string, BrokerState>()
  /** The brokers `newlySuspect` last found suspect. */
  #suspected = new Set<string>()

  /** A request went to `broker` (`host:port`). `request` is any object naming it until `answered`. */
  sent(broker: string, request: object, apiKey: number, now: number): void {
    if (LONG_HELD_API_KEYS.has(apiKey)) return
    let state = this.#brokers.get(broker)
    if (!state) {
      state = { unanswered: new Map(), lastAnswerAt: -Infinity }
      this.#brokers.set(broker, state)
    }
    if (state.unanswered.size > 1_000) this.#forget(state, now)
    state.unanswered.set(request, {
      sentAt: now,
      patience: REPLICATED_WRITE_API_KEYS.has(apiKey) ? PRODUCE_SUSPECT_AFTER_MS : SUSPECT_AFTER_MS
    })
  }

  answered(broker: string, request: object, now: number): void {
    const state = this.#brokers.get(broker)
    if (!state) return
    state.unanswered.delete(request)
    state.lastAnswerAt = now
  }

  /** Whether `broker` looks gone at `now`. */
  suspect(broker: string, now: number): boolean {
    const state = this.#brokers.get(broker)
    if (!state) return false
    this.#forget(state, now)
    for (const { sentAt, patience } of state.unanswered.values()) {
      if (now - sentAt >= patience && state.lastAnswerAt < sentAt) return true
    }
    return false
  }

  /**
   * The brokers that turned suspect since the last call (each once per spell: a broker must answer again, and be
   * suspect again, to be named again).
   */
  newlySuspect(now: number): string[] {
    const suspect = new Set([...this.#brokers.keys()].filter(broker => this.suspect(broker, now)))
    const turned = [...suspect].filter(broker => !this.#suspected.has(broker))
    this.#suspected = suspect
    return turned
  }

  /** `brokers` with the suspect ones moved to the end, each part in its given order. */
  order<T>(brokers: readonly T[], keyOf: (broker: T) => string, now: number): T[] {
    const healthy: T[] = []
    const suspect: T[] = []
    for (const broker of brokers) (this.suspect(keyOf(broker), now) ? suspect : healthy).push(broker)
    return [...healthy, ...suspect]
  }

  #forget(state: BrokerState, now: number): void {
    for (const [request, { sentAt }] of state.unanswered) {
      if (now - sentAt >= FORGET_AFTER_MS) state.unanswered.delete(request)
    }
  }
}
