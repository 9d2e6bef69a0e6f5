// DeadMembers, as each controller replica runs it: a dispatcher declared dead by the heartbeats has its static
// members taken out of the real consumer groups of the sources placed on it, whichever replica looks and however
// many look at once. The group as the coordinator describes it (DescribeGroups, the library's admin) is the truth:
// with the members' long session, only a removal takes them out within the test.
import assert from 'node:assert/strict'
import { EventEmitter } from 'node:events'
import { after, describe, it } from 'node:test'
import type { MemberStatus } from '../../src/dispatcher/index.ts'
import { DeadMembers } from '../../src/leader/index.ts'
import type { DeadMembersOptions } from '../../src/leader/index.ts'
import type { Log } from '../../src/log/index.ts'
import { sourceNet } from '../../src/secrets/index.ts'
import type { StoredEntry, StoredSource } from '../../src/store/index.ts'
import { storedKafkaSource } from '../api/helpers.ts'
import { brokers, createTopic, uniqueName } from '../helpers/kafka.ts'
import { StaticGroup } from '../helpers/static-group.ts'
import { eventually } from '../helpers/wait.ts'

/** The source as the store holds it: its group on the test broker, two vreplicas on each of `placedOn`. */
function sourceEntry(groupId: string, topic: string, placedOn: readonly string[]): StoredEntry<StoredSource> {
  return storedKafkaSource(placedOn, { bootstrapServers: brokers(), topics: [topic], consumerGroup: groupId }, 2)
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

  liveDispatchers(): MemberStatus[] {
    return this.statuses.filter(m => m.state !== 'dead')
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
  const group = new StaticGroup()
  const running: DeadMembers[] = []
  after(async () => {
    for (const d of running) d.stop()
    await Promise.all(running.map(d => d.idle()))
    await group.close()
  })
  const instanceIds = (groupId: string) => group.instanceIds(groupId)

  /** A group with the dead dispatcher's two members and a live one's. */
  async function groupWithDeadMembers(): Promise<{ groupId: string; topic: string }> {
    const topic = uniqueName('dead-members')
    const groupId = uniqueName('dead-members-group')
    await createTopic(topic, { partitions: 4 })
    const dead = [await group.join(groupId, topic, 'dead-d-0'), await group.join(groupId, topic, 'dead-d-1')]
    await group.join(groupId, topic, 'alive-d-0')
    await eventually(async () => ((await instanceIds(groupId)).length === 3 ? true : undefined), 30_000, 'joined')
    for (const consumer of dead) await group.die(consumer)
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
    await Promise.all(replicas.map(r => r.idle()))
    for (const view of views) assert.equal(view.barriers, 1, 'each replica reads the heartbeats up to now first')
    assert.equal(logged.filter(m => m.includes('removed from their group')).length, 1, logged.join('; '))
    // A replica may have to try again (the group rebalancing after another's removal); none gives up.
    assert.equal(logged.filter(m => m.startsWith('warn')).length, 0, logged.join('; '))
  })

  it('removes nothing while the replica cannot read the heartbeats to their end', async () => {
    const { groupId, topic } = await groupWithDeadMembers()
    const cutOff = new Heartbeats()
    cutOff.barrierFails = true
    const logged: string[] = []
    const deadMembers = replica(cutOff, sourceEntry(groupId, topic, ['dead-d', 'alive-d']), logged)
    cutOff.declare([member('dead-d', 'dead'), member('alive-d', 'alive')])
    await deadMembers.idle()
    assert.equal(cutOff.barriers, 1)
    assert.equal(logged.filter(m => m.includes('could not remove')).length, 1, logged.join('; '))
    assert.deepEqual(await instanceIds(groupId), ['alive-d-0', 'dead-d-0', 'dead-d-1'])
  })

  it('removes nothing while it sees the whole pool dead (a view that stalled, read to an end that no longer moves)', async () => {
    const { groupId, topic } = await groupWithDeadMembers()
    const stalled = new Heartbeats()
    const logged: string[] = []
    const deadMembers = replica(stalled, sourceEntry(groupId, topic, ['dead-d', 'alive-d']), logged)
    stalled.declare([member('dead-d', 'dead'), member('alive-d', 'dead')])
    await deadMembers.idle()
    assert.deepEqual(await instanceIds(groupId), ['alive-d-0', 'dead-d-0', 'dead-d-1'])
    assert.deepEqual(logged, [])
  })

  it('removes nothing of a dispatcher back in a new incarnation by the time the heartbeats are read', async () => {
    const { groupId, topic } = await groupWithDeadMembers()
    const back = new Heartbeats()
    const logged: string[] = []
    const deadMembers = replica(back, sourceEntry(groupId, topic, ['dead-d', 'alive-d']), logged)
    const read = back.barrier.bind(back)
    back.barrier = async () => {
      back.statuses = [member('dead-d', 'alive', 2), member('alive-d', 'alive')]
      await read()
    }
    back.declare([member('dead-d', 'dead'), member('alive-d', 'alive')])
    await deadMembers.idle()
    assert.equal(back.barriers, 1)
    assert.deepEqual(await instanceIds(groupId), ['alive-d-0', 'dead-d-0', 'dead-d-1'])
    assert.deepEqual(logged, [])
  })
})
