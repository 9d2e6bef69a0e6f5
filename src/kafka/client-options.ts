/**
 * Kafka client settings shared by every Shoal process. The group session timeout is Kafka's own
 * (classic group protocol): how long the group coordinator waits for a member's heartbeat before it
 * reassigns the member's partitions. A few seconds keeps controller failover fast; it is not the
 * dispatcher liveness timeout, which Shoal judges itself (DESIGN §4, "two timeouts").
 */
export const GROUP_SESSION_TIMEOUT_MS = 6_000
export const GROUP_HEARTBEAT_INTERVAL_MS = 1_000
export const GROUP_REBALANCE_TIMEOUT_MS = 10_000

/**
 * How long every Kafka client in Shoal waits on a broker (docs/kafka.md, "Client timeouts"). The client's own
 * defaults — a request may wait 30 s, metadata is asked of the bootstrap brokers in the order given — made a
 * broker that black-holes (a zone lost or cut off: no refusal, no reset) cost 37–97 s of outage, far past the
 * dispatcher liveness timeout. A request on such a connection now fails after a few seconds, the connection is
 * dropped, and the retry asks another broker.
 */
export const KafkaTimeouts = Object.freeze({
  /** A TCP (and TLS, SASL) connection to a broker that is not made in this long is abandoned for the next broker. */
  connectMs: 3_000,
  /**
   * Produce and admin requests: the broker may hold them for the client's `timeout` (5 s: the wait for acks=all,
   * also the transaction timeout), so a little more than that.
   */
  requestMs: 7_000,
  /** Fetches and offset lookups: a fetch waits at most 500 ms at the broker for data. */
  fetchMs: 5_000,
  /** A group member's requests: the coordinator holds a JoinGroup for up to the rebalance timeout. */
  groupMs: GROUP_REBALANCE_TIMEOUT_MS + 2_000
})

/** The kind of work a client does, which decides how long one of its requests may take (`KafkaTimeouts`). */
export type KafkaClientKind = 'request' | 'fetch' | 'group'

/**
 * The options every Kafka client Shoal makes starts from: its id, its bootstrap brokers starting at a random one
 * (so that the clients of a process do not all ask the same first broker — the one that may be gone — for
 * metadata; the client goes round the list on each retry), and the timeouts for its kind.
 */
export function kafkaClientOptions(
  clientId: string,
  brokers: readonly string[],
  kind: KafkaClientKind
): { clientId: string; bootstrapBrokers: string[]; connectTimeout: number; requestTimeout: number } {
  const start = Math.floor(Math.random() * brokers.length)
  return {
    clientId,
    bootstrapBrokers: [...brokers.slice(start), ...brokers.slice(0, start)],
    ...kafkaConnectionTimeouts(kind)
  }
}

/** The timeouts alone, for a connection pool of Shoal's own. */
export function kafkaConnectionTimeouts(kind: KafkaClientKind): { connectTimeout: number; requestTimeout: number } {
  const requestTimeout =
    kind === 'group' ? KafkaTimeouts.groupMs : kind === 'fetch' ? KafkaTimeouts.fetchMs : KafkaTimeouts.requestMs
  return { connectTimeout: KafkaTimeouts.connectMs, requestTimeout }
}

/** Fetch isolation levels of the Kafka protocol. */
export const IsolationLevels = { READ_UNCOMMITTED: 0, READ_COMMITTED: 1 } as const

/** `host:port,host:port` → the list the client wants, refusing anything that is not host:port. */
export function parseBootstrap(value: string): string[] {
  const brokers = value
    .split(',')
    .map(s => s.trim())
    .filter(s => s.length > 0)
  for (const broker of brokers) {
    if (!/^[^\s:]+:\d{1,5}$/.test(broker) && !/^\[[0-9a-fA-F:]+\]:\d{1,5}$/.test(broker)) {
      throw new Error(`not a host:port address: ${broker}`)
    }
  }
  if (brokers.length === 0) throw new Error('no broker address given')
  return brokers
}

export interface KafkaConnection {
  /** Bootstrap brokers, `host:port`. */
  readonly brokers: readonly string[]
  /** Client id prefix; each client appends its role. */
  readonly clientId: string
}
