// A member whose group coordinator answers nothing any more (SIGSTOP: its kernel still accepts and holds requests —
// a broker lost with its zone). The client learns of the new coordinator only once a request to the old one times
// out, and until then every commit, and every read of a hand-over's mark, went to the lost one and failed: the lab's
// broker zone loss saw a hand-over's release fail 6 s after the loss, though Kafka had a new coordinator after 2.9 s,
// and the next owner wait out the hand-over. The member now looks the coordinator up itself; the coordinator as the
// brokers that answer name it is the truth, and the offsets committed through it are read back from it.
import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { Admin, Consumer, FindCoordinatorKeyTypes } from '@platformatic/kafka'
import { startEmbeddedKafka } from '../../src/kafka/embedded/index.ts'
import type { EmbeddedKafka } from '../../src/kafka/embedded/index.ts'
import { brokerHealth } from '../../src/kafka/index.ts'
import { GroupMembership } from '../../src/kafka-source/group-membership.ts'
import type { MemberContext } from '../../src/kafka-source/member-context.ts'
import { OffsetCommitter } from '../../src/kafka-source/offset-committer.ts'
import { uniqueName } from '../helpers/kafka.ts'
import { eventually } from '../helpers/wait.ts'

describe('a member whose group coordinator answers nothing', () => {
  let kafka: EmbeddedKafka | undefined
  const stopped: number[] = []
  const closing: Array<() => Promise<unknown>> = []
  after(async () => {
    for (const pid of stopped) process.kill(pid, 'SIGCONT')
    for (const close of closing.reverse()) await close().catch(() => undefined)
    await kafka?.stop()
  })

  it('commits to, and reads back from, the coordinator Kafka names now, while its client still names the lost one', async () => {
    kafka = await startEmbeddedKafka({ brokers: 3, port: 0 })
    const all = [...kafka.bootstrapBrokers]
    const topic = uniqueName('coordinator-lost')
    const groupId = uniqueName('coordinator-lost-group')
    const admin = new Admin({ clientId: 'test-admin', bootstrapBrokers: all })
    closing.push(() => admin.close())
    await admin.createTopics({ topics: [topic], partitions: 3, replicas: 3 })
    const consumer = new Consumer({
      clientId: 'test-coordinator-lost',
      groupId,
      groupInstanceId: 'd-0',
      bootstrapBrokers: all,
      sessionTimeout: 30_000,
      heartbeatInterval: 1_000
    })
    closing.push(() => consumer.close(true))
    await consumer.consume({ topics: [topic] })
    await eventually(
      async () => (consumer.memberId && consumer.coordinatorId !== null ? true : undefined),
      30_000,
      'joined'
    )
    const committer = new OffsetCommitter('test-coordinator-lost')
    closing.push(() => committer.close())
    // The member's client, as it is until a request to the lost coordinator times out: its member id and generation
    // are the real ones, and it still names the coordinator it had (this test's client may learn sooner).
    let staleCoordinator: number | null = null
    const client = {
      get memberId() {
        return consumer.memberId
      },
      get generationId() {
        return consumer.generationId
      },
      get coordinatorId() {
        return staleCoordinator ?? consumer.coordinatorId
      },
      metadata: (options: Parameters<Consumer['metadata']>[0]) => consumer.metadata(options)
    }
    const ctx = {
      consumer: client,
      topics: new Set([topic]),
      options: { committer, source: { groupId } }
    } as unknown as MemberContext
    const membership = new GroupMembership(ctx)
    const before = await membership.identityNow()
    const lost = kafka.brokers.find(b => b.nodeId === consumer.coordinatorId)!
    const lostKey = lost.address
    assert.equal(`${before.coordinator.host}:${before.coordinator.port}`, lostKey)

    process.kill(lost.pid!, 'SIGSTOP')
    stopped.push(lost.pid!)
    const lostId = lost.nodeId
    staleCoordinator = lostId
    const live = all.filter(b => b !== lostKey)
    const askLive = new Admin({ clientId: 'test-admin-live', bootstrapBrokers: live })
    closing.push(() => askLive.close())
    // Kafka's own answer, from the brokers that answer: a coordinator other than the lost one.
    const named = await eventually(
      async () => {
        const [found] = await askLive
          .findCoordinator({ keyType: FindCoordinatorKeyTypes.GROUP, keys: [groupId] })
          .catch(() => [undefined])
        return found !== undefined && found.nodeId >= 0 && found.nodeId !== lostId ? found : undefined
      },
      60_000,
      'a new coordinator named by the live brokers'
    )

    // A commit through the member's identity: it fails while the lost coordinator is not yet known to answer
    // nothing (its requests wait), and lands at the new one after.
    const offsets = [{ topic, partition: 1, offset: 7n, metadata: 'test' }]
    const identity = await eventually(
      async () => {
        try {
          const now = await membership.identityNow()
          await committer.commit({ groupId, groupInstanceId: 'd-0', ...now }, offsets)
          return now
        } catch {
          return undefined
        }
      },
      60_000,
      'a commit that lands'
    )
    assert.ok(brokerHealth.suspect(lostKey, Date.now()), 'the lost coordinator is known to answer nothing')
    assert.equal(`${identity.coordinator.host}:${identity.coordinator.port}`, `${named.host}:${named.port}`)
    const read = await committer.committed(identity.coordinator, groupId, [{ topic, partition: 1 }])
    assert.deepEqual(read.get(`${topic}/1`), { offset: 7n, metadata: 'test' })
  })
})
