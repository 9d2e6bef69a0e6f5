import { KafkaAdmin } from './clients.ts'
import { kafkaClientOptions } from './client-options.ts'
import type { KafkaConnection } from './client-options.ts'

export interface TopicSpec {
  readonly name: string
  readonly partitions: number
  readonly configs: Readonly<Record<string, string>>
}

/**
 * Creates the topics that do not exist yet, with a replication factor that fits the cluster
 * (3 with min.insync.replicas 2 on three or more brokers, else what the brokers allow), and checks that
 * those that exist have the partition count Shoal needs: a bucket count cannot change after creation.
 */
export async function ensureTopics(connection: KafkaConnection, specs: readonly TopicSpec[]): Promise<void> {
  const admin = new KafkaAdmin({
    ...kafkaClientOptions(`${connection.clientId}-admin`, connection.brokers, 'request'),
    retries: 5,
    retryDelay: 300
  })
  try {
    const cluster = await admin.metadata({ topics: [] })
    const replicas = Math.min(3, cluster.brokers.size)
    const minIsr = Math.max(1, Math.min(2, replicas - 1))
    const existing = new Set(await admin.listTopics())
    let createError: unknown
    for (const spec of specs) {
      if (existing.has(spec.name)) continue
      const configs = { 'min.insync.replicas': String(minIsr), ...spec.configs }
      try {
        await admin.createTopics({
          topics: [spec.name],
          partitions: spec.partitions,
          replicas,
          configs: Object.entries(configs).map(([name, value]) => ({ name, value }))
        })
      } catch (error) {
        // Another replica may be creating it at the same moment; the check below decides.
        createError = error
      }
    }
    // A created topic takes a moment to appear in the brokers' metadata.
    const names = specs.map(s => s.name)
    let missing = names
    for (let attempt = 0; attempt < 50 && missing.length > 0; attempt++) {
      if (attempt > 0) await new Promise(resolve => setTimeout(resolve, 200))
      const present = new Set(await admin.listTopics())
      missing = names.filter(n => !present.has(n))
    }
    if (missing.length > 0) {
      throw new Error(
        `could not create topic(s) ${missing.join(', ')}: ${(createError as Error | undefined)?.message ?? 'unknown error'}`,
        { cause: createError }
      )
    }
    const metadata = await admin.metadata({ topics: specs.map(s => s.name), forceUpdate: true })
    for (const spec of specs) {
      const found = metadata.topics.get(spec.name)?.partitionsCount
      if (found !== spec.partitions) {
        throw new Error(
          `topic ${spec.name} has ${found ?? 'no'} partitions but this installation needs ${spec.partitions}; ` +
            'the bucket count is fixed when the topics are created (use another --prefix or the same --buckets)'
        )
      }
    }
  } finally {
    await admin.close()
  }
}
