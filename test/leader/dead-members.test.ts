// DeadMembers, as each controller replica runs it: a dispatcher declared dead by the heartbeats has its static
// members taken out of the real consumer groups of the sources placed on it, whichever replica looks and however
// many look at once. The group as the coordinator describes it (DescribeGroups, the library's admin) is the truth:
// with the members' long session, only a removal takes them out within the test.
import assert from 'node:assert/strict'
import { EventEmitter } from 'node:events'
import { after, describe, it } from 'node:test'
import { Admin, Consumer } from '@platformatic/kafka'
import { validateResource, withStoredDefaults } from '../../src/api/index.ts'
import type { MemberStatus } from '../../src/dispatcher/index.ts'
import { DeadMembers } from '../../src/leader/index.ts'
import type { DeadMembersOptions } from '../../src/leader/index.ts'
import type { Log } from '../../src/log/index.ts'
import { sourceNet } from '../../src/secrets/index.ts'
import type { StoredEntry, StoredSource } from '../../src/store/index.ts'
import { kafkaSourceManifest } from '../api/helpers.ts'
import { brokers, createTopic, uniqueName } from '../helpers/kafka.ts'
import { eventually } from '../helpers/wait.ts'

const KEY = 'KafkaSource/default/orders'

/** The source as the store holds it: its group on the test broker, placed on `placedOn`. */
function sourceEntry(groupId: string, topic: string, placedOn: readonly string[]): StoredEntry<StoredSource> {
  const resource = validateResource({
    ...kafkaSourceManifest,
    spec: { ...kafkaSourceManifest.spec, bootstrapServers: brokers(), topics: [topic], consumerGroup: groupId }
  })
  const metadata = { ...resource.metadata, uid: 'u1', generation: 1, creationTimestamp: '2026-01-01T00:00:00Z' }
  const object = withStoredDefaults({ ...resource, metadata }) as unknown as StoredSource
  return {
    key: KEY,
    bucket: 0,
    resourceVersion: '3',
    object,
    status: undefined,
    scheduling: {
      source: KEY,
      slot: 'consumer',
      placements: placedOn.map(podName => ({ podName, vreplicas: 2 })),
      pending: 0,
      epoch: 1,
      revision: 1,
      since: '2026-01-01T00:00:01Z'
    }
  }
}

function member(id: string, state: MemberStatus['state'], incarnation = 1): MemberStatus {
  return {
    id,
    incarnation,
    ordinal: 0,
    zone: 'a',
    node: id,
    capacity: { consumers: 10, schedules: 10 },
    used: { consumers: 0, schedules: 0 },
    contractOffset: '0',
    startedAt: '2026-01-01T00:00:00Z',
    lastSeen: 0,
    state
  }
}

/** The heartbeats as a replica reads them: whom they say is dead, and a barrier that may fail (a stalled view). */
class Heartbeats extends EventEmitter<{ change: [] }> {
  statuses: MemberStatus[] = []
  barriers = 0
  barrierFails = false

  members(): MemberStatus[] {
    return this.statuses
  }

  async barrier(): Promise<void> {
    this.barriers++
    if (this.barrierFails) throw new Error('the members partition cannot be read')
  }

  declare(statuses: MemberStatus[]): void {
    this.statuses = statuses
    this.emit('change')
  }
}

describe('DeadMembers: a dead dispatcher’s members removed by every controller replica', () => {
  const consumers: Consumer[] = []
  const admin = new Admin({ clientId: 'test-dead-members-admin', bootstrapBrokers: brokers() })
  const running: DeadMembers[] = []
  after(async () => {
    await Promise.all(running.map(d => d.stop()))
    await Promise.allSettled(consumers.map(c => c.close(true)))
    await admin.close()
  })

  async function join(groupId: string, topic: string, instanceId: string): Promise<Consumer> {
    const consumer = new Consumer({
      clientId: `test-${instanceId}`,
      groupId,
      groupInstanceId: instanceId,
      bootstrapBrokers: brokers(),
      sessionTimeout: 45_000,
      heartbeatInterval: 1_000
    })
    consumers.push(consumer)
    await consumer.consume({ topics: [topic] })
    return consumer
  }

  /** A process gone without leaving: its client stops heartbeating, its member stays in the group. */
  async function die(consumer: Consumer): Promise<void> {
    consumer.memberId = null
    await new Promise<void>(resolve => consumer.leaveGroup(false, () => resolve()))
    await consumer.close()
  }

  const instanceIds = async (groupId: string) =>
    [...((await admin.describeGroups({ groups: [groupId] })).get(groupId)?.members.values() ?? [])]
      .map(m => m.groupInstanceId)
      .sort()

  /** A group with the dead dispatcher's two members and a live one's. */
  async function groupWithDeadMembers(): Promise<{ groupId: string; topic: string }> {
    const topic = uniqueName('dead-members')
    const groupId = uniqueName('dead-members-group')
    await createTopic(topic, { partitions: 4 })
    const dead = [await join(groupId, topic, 'dead-d-0'), await join(groupId, topic, 'dead-d-1')]
    await join(groupId, topic, 'alive-d-0')
    await eventually(async () => ((await instanceIds(groupId)).length === 3 ? true : undefined), 30_000, 'joined')
    for (const consumer of dead) await die(consumer)
    assert.deepEqual(await instanceIds(groupId), ['alive-d-0', 'dead-d-0', 'dead-d-1'])
    return { groupId, topic }
  }

  function replica(heartbeats: Heartbeats, entry: StoredEntry<StoredSource>, logged: string[]): DeadMembers {
    const store = { snapshot: () => [entry], peek: (key: string) => (key === entry.key ? entry : undefined) }
    const log: Log = (level, message) => logged.push(`${level}: ${message}`)
    const options: DeadMembersOptions = {
      connection: { brokers: brokers(), clientId: `test-replica-${running.length}` },
      store,
      net: sourceNet(store, undefined),
      members: heartbeats,
      log
    }
    const deadMembers = new DeadMembers(options)
    running.push(deadMembers)
    deadMembers.start()
    return deadMembers
  }

  it('three replicas told at once: the dead dispatcher’s members leave the group, once, and the live one stays', async () => {
    const { groupId, topic } = await groupWithDeadMembers()
    const entry = sourceEntry(groupId, topic, ['dead-d', 'alive-d'])
    const logged: string[] = []
    const views = [new Heartbeats(), new Heartbeats(), new Heartbeats()]
    const replicas = views.map(view => replica(view, entry, logged))
    for (const view of views) view.declare([member('dead-d', 'dead'), member('alive-d', 'alive')])
    await eventually(
      async () => ((await instanceIds(groupId)).length === 1 ? true : undefined),
      30_000,
      'the dead members removed'
    )
    assert.deepEqual(await instanceIds(groupId), ['alive-d-0'])
    // Each replica is done: it removed them, or found them gone.
    await Promise.all(replicas.map(r => r.stop()))
    for (const view of views) assert.equal(view.barriers, 1, 'each replica reads the heartbeats up to now first')
    assert.equal(logged.filter(m => m.includes('removed from their group')).length, 1, logged.join('; '))
    // A replica may have to try again (the group rebalancing after another's removal); none gives up.
    assert.equal(logged.filter(m => m.startsWith('warn')).length, 0, logged.join('; '))
    assert.equal(logged.filter(m => m.includes('removed from their group')).length, 1, logged.join('; '))
  })

  it('removes nothing while the replica cannot read the heartbeats up to now, nor once the dispatcher is back', async () => {
    const { groupId, topic } = await groupWithDeadMembers()
    const entry = sourceEntry(groupId, topic, ['dead-d', 'alive-d'])
    const stalled = new Heartbeats()
    stalled.barrierFails = true
    const logged: string[] = []
    const cutOff = replica(stalled, entry, logged)
    stalled.declare([member('dead-d', 'dead'), member('alive-d', 'dead')])
    await cutOff.stop()
    assert.equal(stalled.barriers, 2, 'one look per dispatcher declared dead')
    assert.equal(logged.filter(m => m.includes('could not remove')).length, 2, logged.join('; '))
    // Back before the removal was asked for: its newer incarnation's members are not the dead one's.
    const back = new Heartbeats()
    replica(back, entry, logged)
    back.statuses = [member('dead-d', 'dead')]
    const looking = back.barrier.bind(back)
    back.barrier = async () => {
      back.statuses = [member('dead-d', 'alive', 2)]
      await looking()
    }
    const backAgain = running.at(-1)!
    back.emit('change')
    await backAgain.stop()
    assert.equal(back.barriers, 1)
    assert.deepEqual(await instanceIds(groupId), ['alive-d-0', 'dead-d-0', 'dead-d-1'])
  })
})
