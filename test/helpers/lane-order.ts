// What a sink saw of one order lane (a partition under `ordered`, a partition's key under `ordering: key`), checked
// afterwards against the guarantee docs/delivery.md and docs/kafka-source.md give across member changes:
//
//   - a lane's record is sent only once every record before it in the lane has been answered (2xx) at least once:
//     no overtaking, no skipping ahead, one at a time — by one owner, and across a hand-over too, because the next
//     owner starts at the committed offset and everything below it was handled;
//   - a request (a batch) holds consecutive records of the lane;
//   - the lane may go back — a request starting at or before the last record sent — only as a redelivery: the
//     next owner (after a rebalance or a crash) sends again from the commit what the last owner had sent but not
//     committed. At-least-once repeats a stretch of records already sent; it never jumps over one.
//
// The lanes' records are known only at the end (from every arrival, once nothing is lost), so the log is replayed
// then: each offset's place in its lane is its rank among the lane's offsets.

/** One thing the sink saw: a request arrived carrying `offsets` of `lane` (in body order), or was answered 2xx. */
type Entry = { readonly kind: 'arrived' | 'answered'; readonly lane: string; readonly offsets: readonly number[] }

/** What the replay found: broken rules (empty when the order held) and, per lane, how often it went back. */
export interface LaneOrderReport {
  readonly violations: readonly string[]
  readonly restarts: ReadonlyMap<string, number>
  readonly lanes: number
}

/** Arrivals and answers per lane, in the order the sink saw them. */
export class LaneOrderLog {
  readonly #entries: Entry[] = []

  arrived(lane: string, offsets: readonly number[]): void {
    this.#entries.push({ kind: 'arrived', lane, offsets })
  }

  answered(lane: string, offsets: readonly number[]): void {
    this.#entries.push({ kind: 'answered', lane, offsets })
  }

  /** Replays the log against the rules above. */
  check(): LaneOrderReport {
    const offsetsOf = new Map<string, Set<number>>()
    for (const { lane, offsets } of this.#entries) {
      const set = offsetsOf.get(lane) ?? new Set<number>()
      for (const o of offsets) set.add(o)
      offsetsOf.set(lane, set)
    }
    const rank = new Map<string, Map<number, number>>()
    for (const [lane, set] of offsetsOf) {
      rank.set(lane, new Map([...set].sort((a, b) => a - b).map((o, i) => [o, i])))
    }
    const violations: string[] = []
    const restarts = new Map<string, number>()
    const state = new Map<string, { answered: Set<number>; prefix: number; last: number }>()
    for (const { kind, lane, offsets } of this.#entries) {
      const ranks = offsets.map(o => rank.get(lane)!.get(o)!)
      const s = state.get(lane) ?? { answered: new Set<number>(), prefix: 0, last: -1 }
      state.set(lane, s)
      if (kind === 'answered') {
        for (const r of ranks) s.answered.add(r)
        while (s.answered.has(s.prefix)) s.prefix++
        continue
      }
      const first = ranks[0]!
      if (ranks.some((r, i) => i > 0 && r !== ranks[i - 1]! + 1)) {
        violations.push(`${lane}: one request with records not consecutive in the lane: offsets ${offsets.join(',')}`)
      }
      if (first > s.prefix) {
        violations.push(
          `${lane}: offset ${offsets[0]} sent while an earlier record of the lane (rank ${s.prefix}) was not answered yet`
        )
      }
      if (first <= s.last) restarts.set(lane, (restarts.get(lane) ?? 0) + 1)
      s.last = ranks[ranks.length - 1]!
    }
    return { violations, restarts, lanes: offsetsOf.size }
  }
}
