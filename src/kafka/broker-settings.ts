import { ConfigResourceTypes } from '@platformatic/kafka'
import { kafkaClientOptions } from './client-options.ts'
import type { KafkaConnection } from './client-options.ts'
import { KafkaAdmin } from './clients.ts'
import { EMBEDDED_LAG_MS, EMBEDDED_SESSION_MS } from './embedded/config.ts'

/** A broker setting that makes Shoal's liveness unsafe on this cluster, with what to set instead. */
export interface UnsafeBrokerSetting {
  readonly broker: string
  readonly name: string
  readonly value: string
  readonly problem: string
}

/**
 * The broker settings a dispatcher's heartbeats depend on, judged (pure). Heartbeats are written with acks=all, and a
 * dispatcher fences itself when none was acknowledged for half the liveness timeout (`fenceAfterMs`). Two broker
 * settings decide how long a broker's death holds every heartbeat:
 * - `replica.lag.time.max.ms` (Kafka's default 30 s): a dead follower stays in the ISR, holding acks=all writes, until
 *   the leader's ISR check — run every half of it — finds it behind for that long: up to 1.5 times the setting;
 * - `broker.session.timeout.ms` (Kafka's default 9 s): a dead leader keeps its partitions until the KRaft controller
 *   fences it that long after its last heartbeat; only then does a new leader take the heartbeats.
 * When either is not below the fence time, the death of one broker fences every healthy dispatcher: safe, but an
 * outage. A cluster of one broker has no followers and no other leader, so nothing to judge.
 */
export function unsafeBrokerSettings(
  brokers: ReadonlyMap<string, ReadonlyMap<string, string>>,
  fenceAfterMs: number
): UnsafeBrokerSetting[] {
  const unsafe: UnsafeBrokerSetting[] = []
  if (brokers.size < 2) return unsafe
  for (const [broker, configs] of brokers) {
    const lag = configs.get('replica.lag.time.max.ms')
    if (lag !== undefined && !(1.5 * Number(lag) < fenceAfterMs)) {
      unsafe.push({
        broker,
        name: 'replica.lag.time.max.ms',
        value: lag,
        problem:
          `a dead follower holds acks=all heartbeats for up to ${1.5 * Number(lag)} ms (1.5 times the setting), at ` +
          `least the ${fenceAfterMs} ms after which a dispatcher fences itself: a broker's death fences healthy ` +
          `dispatchers. Set it below ${Math.floor(fenceAfterMs / 1.5)} ms (shoal kafka start sets ${EMBEDDED_LAG_MS}), ` +
          `or raise --liveness-timeout above ${3 * Number(lag)} ms`
      })
    }
    const session = configs.get('broker.session.timeout.ms')
    if (session !== undefined && !(Number(session) < fenceAfterMs)) {
      unsafe.push({
        broker,
        name: 'broker.session.timeout.ms',
        value: session,
        problem:
          `a dead partition leader keeps the members partition for ${session} ms before another broker leads it, at ` +
          `least the ${fenceAfterMs} ms after which a dispatcher fences itself: a broker's death fences healthy ` +
          `dispatchers. Set it below ${fenceAfterMs} ms on the KRaft controllers (shoal kafka start sets ` +
          `${EMBEDDED_SESSION_MS}), or raise --liveness-timeout above ${2 * Number(session)} ms`
      })
    }
  }
  return unsafe
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
        configurationKeys: ['replica.lag.time.max.ms', 'broker.session.timeout.ms']
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
