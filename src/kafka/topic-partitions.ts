import { KafkaAdmin } from './clients.ts'
import { kafkaClientOptions } from './client-options.ts'
import type { KafkaConnection } from './client-options.ts'
import { kafkaSecurityOptions } from './client-security.ts'
import type { KafkaClientSecurity } from './client-security.ts'

/**
 * The partition count of each of the named topics that exists (a missing topic is absent from the map).
 * For processes that create topics only when nobody did before them, and must otherwise take the partition
 * counts the creator chose. `security`: a KafkaSource's resolved `spec.net`, for its own cluster.
 */
export async function topicPartitions(
  connection: KafkaConnection,
  topics: readonly string[],
  security?: KafkaClientSecurity
): Promise<Map<string, number>> {
  const admin = new KafkaAdmin({
    ...kafkaClientOptions(`${connection.clientId}-admin`, connection.brokers, 'request'),
    ...kafkaSecurityOptions(security),
    retries: 5,
    retryDelay: 300
  })
  try {
    const existing = new Set(await admin.listTopics())
    const present = topics.filter(t => existing.has(t))
    const counts = new Map<string, number>()
    if (present.length === 0) return counts
    const metadata = await admin.metadata({ topics: present, forceUpdate: true })
    for (const topic of present) {
      const count = metadata.topics.get(topic)?.partitionsCount
      if (count !== undefined) counts.set(topic, count)
    }
    return counts
  } finally {
    await admin.close()
  }
}
