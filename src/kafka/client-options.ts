/**
 * Kafka client settings shared by every Shoal process. The group session timeout is Kafka's own
 * (classic group protocol): how long the group coordinator waits for a member's heartbeat before it
 * reassigns the member's partitions. A few seconds keeps controller failover fast; it is not the
 * dispatcher liveness timeout, which Shoal judges itself (DESIGN §4, "two timeouts").
 */
export const GROUP_SESSION_TIMEOUT_MS = 6_000
export const GROUP_HEARTBEAT_INTERVAL_MS = 1_000
export const GROUP_REBALANCE_TIMEOUT_MS = 10_000

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
