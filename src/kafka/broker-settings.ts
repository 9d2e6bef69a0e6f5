import { ConfigResourceTypes } from '@platformatic/kafka'
import { kafkaClientOptions } from './client-options.ts'
import type { KafkaConnection } from './client-options.ts'
import { KafkaAdmin } from './clients.ts'

/** A broker setting that makes Shoal's liveness unsafe on this cluster, with what to set instead. */
export interface UnsafeBrokerSetting {
  readonly broker: string
  readonly name: string
  readonly value: string
  readonly problem: string
}

/**
 * The broker settings a dispatcher's heartbeats depend on, judged (pure). Heartbeats are written with acks=all: a
 * follower that died stays in the ISR for `replica.lag.time.max.ms` (Kafka's default: 30 s), and until it leaves,
 * no heartbeat is acknowledged. Longer than the time a dispatcher waits for one before it fences itself (half the
 * liveness timeout), and the death of any broker fences every healthy dispatcher: safe, but an outage. A cluster of
 * one broker has no followers, so nothing to judge.
 */
export function unsafeBrokerSettings(
  brokers: ReadonlyMap<string, ReadonlyMap<string, string>>,
  fenceAfterMs: number
): UnsafeBrokerSetting[] {
  const unsafe: UnsafeBrokerSetting[] = []
  // One broker has no followers: nothing waits for one.
  if (brokers.size < 2) return unsafe
  for (const [broker, configs] of brokers) {
    const lag = configs.get('replica.lag.time.max.ms')
    if (lag !== undefined && !(Number(lag) < fenceAfterMs)) {
      unsafe.push({
        broker,
        name: 'replica.lag.time.max.ms',
        value: lag,
        problem:
          `a dead follower holds acks=all heartbeats for up to ${lag} ms, at least the ${fenceAfterMs} ms after which a ` +
          `dispatcher fences itself: a broker's death fences healthy dispatchers. Set it below ${fenceAfterMs} ms ` +
          `(shoal kafka start uses 5000 with the default 10 s liveness timeout), or raise --liveness-timeout above ` +
          `${2 * Number(lag)} ms`
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
        configurationKeys: ['replica.lag.time.max.ms']
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
