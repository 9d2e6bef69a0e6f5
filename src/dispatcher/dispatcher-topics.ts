import { ensureTopics, topicPartitions } from '../kafka/index.ts'
import type { KafkaConnection } from '../kafka/index.ts'
import { storeTopics } from '../store/index.ts'
import type { StoreNames } from '../store/index.ts'

/**
 * Creates the store's topics if nobody did (a dispatcher may be the first process of an installation), taking
 * the bucket count whoever created the other topics chose, so the installation stays consistent.
 */
export async function ensureDispatcherTopics(
  connection: KafkaConnection,
  names: StoreNames,
  buckets: number
): Promise<void> {
  const all = storeTopics(names, buckets)
  const existing = await topicPartitions(
    connection,
    all.map(spec => spec.name)
  )
  const needed = [names.membersTopic, names.contractsTopic]
  if (needed.every(name => existing.has(name))) return
  const chosen = [names.resourcesTopic, names.statusTopic, names.placementsTopic]
    .map(name => existing.get(name))
    .find(count => count !== undefined)
  const specs = chosen === undefined ? all : storeTopics(names, chosen)
  await ensureTopics(
    connection,
    specs.filter(spec => !existing.has(spec.name))
  )
}
