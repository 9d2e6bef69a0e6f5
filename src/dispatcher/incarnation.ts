/**
 * Each start of a dispatcher id gets a higher incarnation than any earlier start: one above the highest
 * the members topic shows for the id, or the wall clock in milliseconds when that is larger. The clock
 * covers a history compacted away (a tombstone's key disappears after `delete.retention.ms`); the log
 * covers a clock that went backwards.
 */
export function nextIncarnation(highestSeen: number | undefined, nowMs: number): number {
  return Math.max((highestSeen ?? 0) + 1, Math.floor(nowMs))
}
