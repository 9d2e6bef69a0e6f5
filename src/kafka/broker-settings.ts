import { ConfigResourceTypes } from '@platformatic/kafka'
import { kafkaClientOptions } from './client-options.ts'
import type { KafkaConnection } from './client-options.ts'
import { KafkaAdmin } from './clients.ts'
import {
  EMBEDDED_ELECTION_MS,
  EMBEDDED_LAG_MS,
  EMBEDDED_QUORUM_FETCH_MS,
  EMBEDDED_SESSION_MS
} from './embedded/config.ts'

/** A broker setting that makes Shoal's liveness unsafe on this cluster, with what to set instead. */
export interface UnsafeBrokerSetting {
  readonly broker: string
  readonly name: string
  readonly value: string
  readonly problem: string
}

/** What a dispatcher's heartbeats allow a broker failover: it fences itself after `fenceAfterMs` without an ack. */
export interface HeartbeatTimings {
  readonly fenceAfterMs: number
  /** Its heartbeats' interval: the newest acknowledged one may be this old when a failover starts. */
  readonly heartbeatIntervalMs: number
}

/**
 * The broker settings a dispatcher's heartbeats depend on, judged (pure). Heartbeats are written with acks=all, and a
 * dispatcher fences itself when none sent in the last `fenceAfterMs` was acknowledged. When a broker's death starts
 * holding acks=all writes, the newest acknowledged heartbeat was sent up to one heartbeat interval before, so the hold
 * must end within the fence time less one interval (the budget). Three kinds of broker setting decide the hold:
 * - `replica.lag.time.max.ms` (Kafka's default 30 s): a dead follower stays in the ISR, holding acks=all writes, until
 *   the leader's ISR check — run every half of it — finds it behind for that long: up to 1.5 times the setting;
 * - `broker.session.timeout.ms` (Kafka's default 9 s): a dead leader keeps its partitions until the KRaft controller
 *   fences it that long after its last heartbeat; only then does a new leader take the heartbeats;
 * - `controller.quorum.fetch.timeout.ms` and `controller.quorum.election.timeout.ms` (Kafka's defaults 2 s and 1 s):
 *   when the node lost is the active KRaft controller, the ISR shrink and the leader election above wait for a new
 *   one, which the other voters elect after their fetch timeout and one to two election timeouts (a split vote adds
 *   a round). A new active controller does not know when the brokers last heartbeated: it fences a dead one a whole
 *   session timeout after it took over. So when the node lost was also the heartbeats' leader — in a cluster of
 *   combined nodes, or a zone's loss — the hold is the quorum's failover plus the broker session timeout.
 * When a hold is not below the budget, the death of one broker fences healthy dispatchers: safe, but an outage. A
 * cluster of one broker has no followers and no other leader, so nothing to judge.
 */
export function unsafeBrokerSettings(
  brokers: ReadonlyMap<string, ReadonlyMap<string, string>>,
  timings: HeartbeatTimings
): UnsafeBrokerSetting[] {
  const unsafe: UnsafeBrokerSetting[] = []
  if (brokers.size < 2) return unsafe
  const { fenceAfterMs, heartbeatIntervalMs } = timings
  const budget = fenceAfterMs - heartbeatIntervalMs
  // The liveness timeout scales the fence time and the interval alike: the least one whose budget is above `holdMs`
  // (to within the rounding of the fence time and interval).
  const livenessFor = (holdMs: number) => Math.floor((holdMs * 2 * fenceAfterMs) / budget) + 1
  const fails = (holdMs: number, what: string, fix: string) =>
    `${what}: a dispatcher fences itself ${fenceAfterMs} ms after the newest acknowledged heartbeat was sent, up to ` +
    `${heartbeatIntervalMs} ms (its interval) before, so a hold from ${budget} ms on fences healthy dispatchers when a ` +
    `broker dies. ${fix}, or raise --liveness-timeout to at least ${livenessFor(holdMs)} ms`
  for (const [broker, configs] of brokers) {
    const lag = configs.get('replica.lag.time.max.ms')
    if (lag !== undefined && !(1.5 * Number(lag) < budget)) {
      unsafe.push({
        broker,
        name: 'replica.lag.time.max.ms',
        value: lag,
        problem: fails(
          1.5 * Number(lag),
          `a dead follower holds acks=all heartbeats for up to ${1.5 * Number(lag)} ms (1.5 times the setting)`,
          `Set it below ${Math.ceil(budget / 1.5)} ms (shoal kafka start sets ${EMBEDDED_LAG_MS})`
        )
      })
    }
    const session = configs.get('broker.session.timeout.ms')
    if (session !== undefined && !(Number(session) < budget)) {
      unsafe.push({
        broker,
        name: 'broker.session.timeout.ms',
        value: session,
        problem: fails(
          Number(session),
          `a dead partition leader keeps the members partition for ${session} ms before another broker leads it`,
          `Set it below ${budget} ms on the KRaft controllers (shoal kafka start sets ${EMBEDDED_SESSION_MS})`
        )
      })
    }
    const quorum = quorumFailoverMs(configs)
    if (quorum !== undefined && !(quorum.ms < budget)) {
      unsafe.push({
        broker,
        name: 'controller.quorum.fetch.timeout.ms + 2 × controller.quorum.election.timeout.ms + broker.session.timeout.ms',
        value: `${quorum.fetch} + 2 × ${quorum.election} + ${quorum.session}`,
        problem: fails(
          quorum.ms,
          `a lost active KRaft controller is replaced up to ${quorum.ms - Number(quorum.session)} ms later, and the ` +
            `new one fences a dead broker a session timeout after that: a node that was the active controller and ` +
            `the heartbeats' leader holds them ${quorum.ms} ms`,
          `Make the sum below ${budget} ms on the controllers (shoal kafka start sets ${EMBEDDED_QUORUM_FETCH_MS}, ` +
            `${EMBEDDED_ELECTION_MS} and ${EMBEDDED_SESSION_MS})`
        )
      })
    }
  }
  return unsafe
}

/** Kafka's defaults of the quorum timeouts and the broker session timeout. */
const KAFKA_DEFAULTS = { fetch: '2000', election: '1000', session: '9000' }

/**
 * The longest a dead node that was the active controller and a partition's leader holds the partition's writes: the
 * quorum's failover, then the new controller's wait of one session timeout. Judged when the broker reports either
 * quorum timeout.
 */
function quorumFailoverMs(
  configs: ReadonlyMap<string, string>
): { readonly fetch: string; readonly election: string; readonly session: string; readonly ms: number } | undefined {
  const fetch = configs.get('controller.quorum.fetch.timeout.ms')
  const election = configs.get('controller.quorum.election.timeout.ms')
  if (fetch === undefined && election === undefined) return undefined
  const all = {
    fetch: fetch ?? KAFKA_DEFAULTS.fetch,
    election: election ?? KAFKA_DEFAULTS.election,
    session: configs.get('broker.session.timeout.ms') ?? KAFKA_DEFAULTS.session
  }
  return { ...all, ms: Number(all.fetch) + 2 * Number(all.election) + Number(all.session) }
}

/** Each broker's settings that `unsafeBrokerSettings` judges, as the cluster reports them. */
export async function readBrokerSettings(connection: KafkaConnection): Promise<Map<string, Map<string, string>>> {
  const admin = new KafkaAdmin({
    ...kafkaClientOptions(`${connection.clientId}-broker-settings`, connection.brokers, 'request'),
    retries: 2,
    retryDelay: 300
  })
  try {
    const cluster = await admin.metadata({ topics: [] })
    const described = await admin.describeConfigs({
      resources: [...cluster.brokers.keys()].map(id => ({
        resourceType: ConfigResourceTypes.BROKER,
        resourceName: String(id),
        configurationKeys: [
          'replica.lag.time.max.ms',
          'broker.session.timeout.ms',
          'controller.quorum.fetch.timeout.ms',
          'controller.quorum.election.timeout.ms'
        ]
      }))
    })
    const settings = new Map<string, Map<string, string>>()
    for (const resource of described) {
      const configs = new Map<string, string>()
      for (const config of resource.configs)
        if (typeof config.value === 'string') configs.set(config.name, config.value)
      settings.set(resource.resourceName, configs)
    }
    return settings
  } finally {
    await admin.close()
  }
}
