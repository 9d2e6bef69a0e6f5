/**
 * The timings that follow from the dispatcher liveness timeout (DESIGN §4, "Liveness"). One number decides
 * them all, so a dispatcher and the controllers judging it can never disagree about their ratios.
 */

/** Default dispatcher liveness timeout: at least twice a Kafka broker failover, or every broker kill looks like every dispatcher dying. */
export const DEFAULT_LIVENESS_TIMEOUT_MS = 10_000

/** Shortest liveness timeout accepted: below it heartbeats (a tenth of it) would be a load, not a signal. */
export const MIN_LIVENESS_TIMEOUT_MS = 1_000

/** Longest liveness timeout accepted. */
export const MAX_LIVENESS_TIMEOUT_MS = 600_000

/**
 * A heartbeat every tenth of the liveness timeout. When a broker's death starts holding acks=all writes, the newest
 * acknowledged heartbeat was sent up to one interval before: the failover has the fence time less one interval to
 * finish before healthy dispatchers fence (broker-settings.ts). At a fifth (1.2 s of the lab's 6 s), a zone cut's ISR
 * shrink (up to 2.85 s with a 1.9 s lag setting) fenced healthy dispatchers for a moment in most of the lab's cuts.
 */
export function heartbeatIntervalOf(livenessTimeoutMs: number): number {
  return Math.round(livenessTimeoutMs / 10)
}

/**
 * How long one heartbeat waits for its acknowledgement (and for a connection): a fifth of the liveness timeout, longer
 * than the interval, so that a connection on a lossy link has room for a retransmitted SYN (Linux waits 1 s). A beat
 * due while one is still waiting joins it.
 */
export function heartbeatDeadlineOf(livenessTimeoutMs: number): number {
  return Math.round(livenessTimeoutMs / 5)
}

/**
 * A dispatcher stops its consumers and schedules when no heartbeat sent in the last half liveness timeout was
 * acknowledged: well before a controller may declare it dead and give its work to another dispatcher.
 */
export function fenceAfterOf(livenessTimeoutMs: number): number {
  return Math.round(livenessTimeoutMs / 2)
}

/**
 * How long a fenced dispatcher's deliveries on the wire may go on before they are cut: a quarter of the liveness
 * timeout, half the fence's lead on the controllers' Dead. By the time they may give its placements (and, by removing
 * its members from their groups, its partitions mid-hand-over) to another dispatcher, nothing of it is on the wire.
 */
export function fencedDrainOf(livenessTimeoutMs: number): number {
  return Math.round(livenessTimeoutMs / 4)
}

/** Throws unless the timeout is an integer number of milliseconds in the accepted range. */
export function checkLivenessTimeout(livenessTimeoutMs: number): void {
  if (
    !Number.isInteger(livenessTimeoutMs) ||
    livenessTimeoutMs < MIN_LIVENESS_TIMEOUT_MS ||
    livenessTimeoutMs > MAX_LIVENESS_TIMEOUT_MS
  ) {
    throw new RangeError(
      `the liveness timeout must be from ${MIN_LIVENESS_TIMEOUT_MS / 1000} s to ${MAX_LIVENESS_TIMEOUT_MS / 1000} s, not ${livenessTimeoutMs} ms`
    )
  }
}
