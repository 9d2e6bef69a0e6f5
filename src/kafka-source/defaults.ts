/** Records in flight per vreplica when a source does not say. */
export const DEFAULT_MAX_IN_FLIGHT = 100

/** How often each member commits the offsets it may commit. */
export const COMMIT_INTERVAL_MS = 1_000

/** How long `close` waits for in-flight deliveries before it aborts them and commits what is handled. */
export const DEFAULT_DRAIN_MS = 10_000

/**
 * Fetched records of one partition that may sit between its committable offset and its fetch position.
 * A record that takes long (a sink in retry) holds the commit of its partition back; in unordered mode the
 * records after it go on being delivered, and this caps how many — so memory stays bounded, and so does
 * what a crash would deliver again.
 */
export const MAX_UNCOMMITTED_PER_PARTITION = 10_000

/**
 * `ordering: key`: records of one partition that may wait behind a busy key before the partition is fetched no
 * further. Each holds its bytes (unlike a record handled ahead of a slow one), so this bounds that memory: a hot
 * key behind a slow sink parks at most this many records per partition, besides one fetch.
 */
export const MAX_KEY_WAITING_PER_PARTITION = 1_000

/** How long a fetch waits at the broker for data; also the most a newly eligible partition waits to be fetched. */
export const FETCH_MAX_WAIT_MS = 500
/**
 * Bytes one fetch may return for one partition (the broker still returns a bigger first batch whole). A member
 * buffers at most one such fetch per partition, so this times its partitions bounds its buffer.
 */
export const FETCH_PARTITION_MAX_BYTES = 256 * 1024
/** Bytes one fetch may return in all. */
export const FETCH_MAX_BYTES = 8 * 1024 * 1024

/** Backoff of a record whose `deliver` threw: doubles from the first to the last value. */
export const DELIVER_ERROR_BACKOFF_MS = { first: 500, max: 30_000 } as const

/**
 * How long the deliveries on the wire of a partition that left the member may go on before they are cut (they
 * are then not handled, and the next owner delivers them again). Nothing new is started for it meanwhile.
 */
export const REVOKE_DRAIN_MS = 5_000

/** How long after the drain a former owner may still try to commit the hand-over; past it, it gives up. */
export const RELEASE_COMMIT_MS = 1_000

/** How long one try of a hand-over's release may take before the next is sent (a commit answers in milliseconds). */
export const RELEASE_ATTEMPT_MS = 500

/**
 * How long a member given a partition whose commit says "draining" waits for the release before it starts
 * from the committed offset anyway (the former owner died mid-drain). Past the drain and the release commit, so
 * a release can never land after the new owner started.
 */
export const HANDOVER_WAIT_MS = REVOKE_DRAIN_MS + RELEASE_COMMIT_MS + 1_000

/**
 * How long a member given a partition whose mark names a member id no longer in the group waits before it starts
 * (see StartPositions): that member can land nothing more, and has nothing on the wire once this margin is past.
 */
export const GONE_OWNER_WAIT_MS = 1_000
