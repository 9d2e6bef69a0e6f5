import { Admin } from '@platformatic/kafka'

/** Partitions of a topic `shoal perf produce` creates when it is missing. */
export const DEFAULT_PERF_PARTITIONS = 6

/**
 * Creates the topic when it does not exist (with `partitions` partitions and the replication the cluster allows,
 * up to 3), so a perf run needs no set-up; says whether it did. An existing topic is used as it is.
 */
export async function ensurePerfTopic(
  brokers: readonly string[],
  topic: string,
  partitions = DEFAULT_PERF_PARTITIONS
): Promise<boolean> {
  const admin = new Admin({ clientId: 'shoal-perf-admin', bootstrapBrokers: [...brokers], retries: 5, retryDelay: 200 })
  try {
    if ((await admin.listTopics()).includes(topic)) return false
    const cluster = await admin.metadata({ topics: [] })
    const replicas = Math.min(3, cluster.brokers.size)
    await admin.createTopics({ topics: [topic], partitions, replicas })
    for (let attempt = 0; attempt < 50; attempt++) {
      const metadata = await admin.metadata({ topics: [topic], forceUpdate: true }).catch(() => undefined)
      const found = metadata?.topics.get(topic)
      // Producing before every partition has a leader would only earn retries.
      if (found?.partitionsCount === partitions && found.partitions.every(p => p.leader >= 0)) return true
      await new Promise(resolve => setTimeout(resolve, 100))
    }
    return true
  } finally {
    await admin.close().catch(() => undefined)
  }
}
