// What tests need to reach the Kafka of the run: its address, names no other test uses, and ready topics.
import { Admin } from '@platformatic/kafka'
import { randomBytes } from 'node:crypto'
import { eventually } from './wait.ts'

/** `host:port` of every bootstrap broker of the run, from KAFKA_BOOTSTRAP_SERVERS (set by test/setup/kafka.ts). */
export function brokers(): string[] {
  const value = process.env['KAFKA_BOOTSTRAP_SERVERS']
  if (!value) {
    throw new Error(
      'KAFKA_BOOTSTRAP_SERVERS is not set: run the tests with `npm test` (it starts a Kafka broker), ' +
        'or set it to a running Kafka'
    )
  }
  return value
    .split(',')
    .map(s => s.trim())
    .filter(Boolean)
}

let counter = 0

/**
 * A name no other test, test file or concurrent run uses, for topics, groups, transactional ids and Shoal
 * prefixes: `<prefix>-<pid>-<n>-<random>`, limited to the characters Kafka allows in topic names.
 */
export function uniqueName(prefix: string): string {
  const clean = prefix.replace(/[^a-zA-Z0-9._-]/g, '-').slice(0, 100)
  counter += 1
  return `${clean}-${process.pid}-${counter}-${randomBytes(4).toString('hex')}`
}

/** Creates a topic and waits until every partition has a leader, so producing to it succeeds at once. */
export async function createTopic(
  topic: string,
  options: { partitions?: number; replicas?: number; configs?: { name: string; value: string }[] } = {}
): Promise<void> {
  const partitions = options.partitions ?? 1
  const admin = new Admin({ clientId: 'shoal-test-admin', bootstrapBrokers: brokers() })
  try {
    await admin.createTopics({
      topics: [topic],
      partitions,
      replicas: options.replicas ?? 1,
      ...(options.configs ? { configs: options.configs } : {})
    })
    await eventually(
      async () => {
        const metadata = await admin.metadata({ topics: [topic], forceUpdate: true })
        const leaders = metadata.topics.get(topic)?.partitions.filter(p => p.leader >= 0).length ?? 0
        return leaders === partitions
      },
      30_000,
      `a leader for each of the ${partitions} partitions of topic ${topic}`
    )
  } finally {
    await admin.close()
  }
}

/**
 * The first `count` distinct items of a consumer stream, then closes it: a consumer group may hand a record out
 * again (a rebalance while it joins restarts a partition from its committed or initial offset), so items are told
 * apart by `identity` (default: the record's partition and offset) and a repeat is dropped. Fails after
 * `timeoutMs` naming what did arrive, rather than hanging until the test runner's timeout.
 */
export async function take<T>(
  stream: AsyncIterable<T> & { close(): Promise<void> },
  count: number,
  timeoutMs = 30_000,
  identity: (item: T) => string = item => {
    const record = item as { partition?: unknown; offset?: unknown }
    return `${String(record.partition)}/${String(record.offset)}`
  }
): Promise<T[]> {
  const items: T[] = []
  const seen = new Set<string>()
  let timedOut = false
  const timer = setTimeout(() => {
    timedOut = true
    void stream.close()
  }, timeoutMs)
  try {
    for await (const item of stream) {
      const id = identity(item)
      if (seen.has(id)) continue
      seen.add(id)
      items.push(item)
      if (items.length >= count) break
    }
  } finally {
    clearTimeout(timer)
  }
  if (timedOut && items.length < count) {
    throw new Error(`received ${items.length} of ${count} messages within ${timeoutMs} ms`)
  }
  return items
}
