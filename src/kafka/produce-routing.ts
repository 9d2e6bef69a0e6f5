/**
 * Produce requests sent to each partition's leader as the client knows it when the request goes out. The client
 * library groups a send's records by leader once, then retries each group on the leader of the group's first
 * partition: after a failover that leaves one group's partitions led by different brokers, every retry is refused
 * (NOT_LEADER_OR_FOLLOWER) for the partitions that moved elsewhere, until the whole send fails some 5 s later and
 * the producer starts over with a new producer id (the lab's broker-zone loss: a producer acknowledged again
 * 10.6 s after its leaders' zone was lost, docs/faults.md). Here a Produce whose records are led by more than one
 * broker is split: each part goes to its own leader, and the answers are joined into the one the library expects.
 */
import { promisify } from 'node:util'
import { MultipleErrors } from '@platformatic/kafka'
import type { API, Broker, Callback, ClusterMetadata, Connection } from '@platformatic/kafka'

/** What routing needs of a record the library produces. */
export interface RoutedRecord {
  readonly topic: string
  readonly partition: number
}

/**
 * `records` by the broker that leads each one's partition now (`leaderOf`); records whose leader is not known stay
 * with `here` (the broker the library chose), in their order within each part.
 */
export function splitByLeader<R extends RoutedRecord>(
  records: readonly R[],
  here: number,
  leaderOf: (topic: string, partition: number) => number | undefined
): Map<number, R[]> {
  const parts = new Map<number, R[]>()
  for (const record of records) {
    const leader = leaderOf(record.topic, record.partition) ?? here
    let part = parts.get(leader)
    if (part === undefined) parts.set(leader, (part = []))
    part.push(record)
  }
  return parts
}

/** The part of a Produce answer routing joins: one entry per topic, each with its partitions' answers. */
export interface ProduceAnswer {
  readonly responses: readonly { readonly name: string; readonly partitionResponses: readonly unknown[] }[]
  readonly throttleTimeMs: number
}

/** Several parts' answers as one: each topic once, its partitions' answers in the parts' order. */
export function joinAnswers<A extends ProduceAnswer>(answers: readonly A[]): A {
  const byTopic = new Map<string, unknown[]>()
  for (const answer of answers) {
    for (const { name, partitionResponses } of answer.responses) {
      const known = byTopic.get(name)
      if (known === undefined) byTopic.set(name, [...partitionResponses])
      else known.push(...partitionResponses)
    }
  }
  return {
    ...answers[0]!,
    responses: [...byTopic].map(([name, partitionResponses]) => ({ name, partitionResponses })),
    throttleTimeMs: Math.max(...answers.map(a => a.throttleTimeMs))
  }
}

type ProduceArguments = [acks: number, timeout: number, records: RoutedRecord[], options: unknown]
type ProduceApi = API<ProduceArguments, ProduceAnswer>

/** What routing needs of the producer: its metadata and its connections (Shoal's, with the suspect-broker bounce). */
export interface RoutingClient {
  /** The metadata the client holds now (the library refreshes it before a retry). */
  metadata(): ClusterMetadata | undefined
  readonly getConnection: (broker: Broker, callback: Callback<Connection>) => void
}

/** acks=0: the broker answers nothing, so there is nothing to join; such a send goes as the library made it. */
const NO_RESPONSE = 0

/** The library's Produce API, sending each record to its partition's leader by the client's current metadata. */
export function routedProduce(client: RoutingClient, api: ProduceApi): ProduceApi {
  const routed = (connection: Connection, ...args: [...ProduceArguments, Callback<ProduceAnswer>?]): void => {
    const [acks, timeout, records, options, callback = () => {}] = args
    const metadata = client.metadata()
    const brokerAt = (nodeId: number): Broker | undefined => metadata?.brokers.get(nodeId)
    const here = [...(metadata?.brokers ?? [])].find(
      ([, b]) => b.host === connection.host && b.port === connection.port
    )?.[0]
    const parts =
      metadata === undefined || here === undefined || acks === NO_RESPONSE
        ? undefined
        : splitByLeader(records, here, (topic, partition) => {
            const leader = metadata.topics.get(topic)?.partitions[partition]?.leader
            return leader !== undefined && brokerAt(leader) !== undefined ? leader : undefined
          })
    // One leader, the broker the library chose: the request goes as it was made.
    if (parts === undefined || here === undefined || (parts.size === 1 && parts.has(here))) {
      api(connection, acks, timeout, records, options, callback)
      return
    }
    const answers: Promise<ProduceAnswer>[] = [...parts].map(([leader, part]) =>
      leader === here
        ? api.async(connection, acks, timeout, part, options)
        : promisify(client.getConnection)(brokerAt(leader)!).then(to => api.async(to!, acks, timeout, part, options))
    )
    // Every part is awaited before answering, so that a retry never overlaps a part still in flight. Every part's
    // error is kept: the library decides from all of them whether to retry, refresh its metadata or start over.
    void Promise.allSettled(answers)
      .then(settled => {
        const failed = settled.flatMap(s => (s.status === 'rejected' ? [s.reason as Error] : []))
        if (failed.length === 1) callback(failed[0]!)
        else if (failed.length > 1) callback(new MultipleErrors('Producing to several leaders failed.', failed))
        else callback(null, joinAnswers(settled.map(s => (s as PromiseFulfilledResult<ProduceAnswer>).value)))
      })
      .catch((error: unknown) =>
        queueMicrotask(() => {
          throw error
        })
      )
  }
  const async = (connection: Connection, ...args: ProduceArguments): Promise<ProduceAnswer> =>
    new Promise((resolve, reject) => {
      routed(connection, ...args, (error, answer) => (error ? reject(error) : resolve(answer!)))
    })
  return Object.assign(routed, { async, key: api.key, version: api.version })
}
