// What the dispatcher tests share: dispatchers and followers on a test prefix, and a stand-in for the
// scheduler leader that writes contract records.
import { Producer } from '@platformatic/kafka'
import { startDispatcher } from '../../src/dispatcher/index.ts'
import type { DispatcherOptions, MemberStatus, RunningDispatcher } from '../../src/dispatcher/index.ts'
import { MembersFollower } from '../../src/leader/index.ts'
import { contractKey, contractPartitionOf, encodeValue, schemaHeaders, storeNames } from '../../src/store/index.ts'
import type { ContractRecord } from '../../src/store/index.ts'
import { brokers } from '../helpers/kafka.ts'
import { eventually } from '../helpers/wait.ts'

/** Short enough for tests to see a dispatcher die, long enough for a loaded CI machine not to flap. */
export const TEST_LIVENESS_MS = 3_000
/** Partitions of the bucketed topics the first dispatcher of a test prefix creates. */
export const TEST_BUCKETS = 4

export function testDispatcher(
  prefix: string,
  id: string,
  extra: Partial<DispatcherOptions> = {}
): Promise<RunningDispatcher> {
  return startDispatcher({
    brokers: brokers(),
    prefix,
    buckets: TEST_BUCKETS,
    id,
    zone: 'zone-a',
    node: 'node-1',
    capacity: 10,
    livenessTimeoutMs: TEST_LIVENESS_MS,
    ...extra
  })
}

export async function testFollower(prefix: string, livenessTimeoutMs = TEST_LIVENESS_MS): Promise<MembersFollower> {
  const follower = new MembersFollower({
    connection: { brokers: brokers(), clientId: `follower-${prefix}` },
    prefix,
    livenessTimeoutMs
  })
  await follower.start()
  return follower
}

/** Waits until the follower shows the member as `predicate` wants it. */
export function memberWhere(
  follower: MembersFollower,
  id: string,
  predicate: (member: MemberStatus | undefined) => boolean,
  what: string
): Promise<MemberStatus | undefined> {
  return eventually(
    async () => {
      const member = follower.view.member(id)
      return predicate(member) ? { member } : undefined
    },
    30_000,
    what
  ).then(found => found.member)
}

/** Writes contract records as the scheduler leader does (the partition Shoal computes, an idempotent producer). */
export class ContractWriter {
  readonly #producer: Producer
  readonly #topic: string

  constructor(prefix: string, bootstrap: readonly string[] = brokers()) {
    this.#topic = storeNames(prefix).contractsTopic
    this.#producer = new Producer({
      clientId: `contracts-${prefix}`,
      bootstrapBrokers: [...bootstrap],
      idempotent: true,
      acks: -1
    })
  }

  /** Writes a placement, or its tombstone with `null`; resolves with the record's offset. */
  async write(
    dispatcher: string,
    source: string,
    record: Omit<ContractRecord, 'dispatcher' | 'source'> | null
  ): Promise<bigint> {
    const value = record === null ? null : encodeValue({ dispatcher, source, ...record })
    const result = await this.#producer.send({
      messages: [
        {
          topic: this.#topic,
          partition: contractPartitionOf(dispatcher, TEST_BUCKETS),
          key: Buffer.from(contractKey(dispatcher, source)),
          value: value as Buffer,
          headers: schemaHeaders()
        }
      ],
      acks: -1
    })
    return result.offsets?.[0]?.offset ?? -1n
  }

  close(): Promise<void> {
    return this.#producer.close()
  }
}
