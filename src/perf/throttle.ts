/**
 * How long to wait before sending record number `sent` (0-based) so that the run keeps to `throughput`
 * records per second, `elapsedMs` after it started; 0 when it may go now or when throughput is -1 (unthrottled).
 */
export function throttleDelay(sent: number, elapsedMs: number, throughput: number): number {
  if (throughput <= 0) return 0
  return Math.max(0, (sent * 1000) / throughput - elapsedMs)
}
