// A dead dispatcher's static members taken out of a real consumer group (LeaveGroup by instance id), as the
// controllers do when they declare the dispatcher dead. The group as the coordinator describes it afterwards
// (DescribeGroups, the library's admin) is the truth: with a long session, the members would otherwise stay.
import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { Admin, Consumer } from '@platformatic/kafka'
import { isMemberOf, removeStaticMembers } from '../../src/kafka-source/index.ts'
import { brokers, createTopic, uniqueName } from '../helpers/kafka.ts'
import { eventually } from '../helpers/wait.ts'

describe('isMemberOf', () => {
  it('names the instance ids of one dispatcher only', () => {
    assert.equal(isMemberOf('d1', 'd1-0'), true)
    assert.equal(isMemberOf('d1', 'd1-12'), true)
    assert.equal(isMemberOf('d1', 'd10-0'), false)
    assert.equal(isMemberOf('d1', 'd1-x'), false)
    assert.equal(isMemberOf('d1', 'd1-'), false)
    assert.equal(isMemberOf('shoal-d-1', 'shoal-d-1-3'), true)
    assert.equal(isMemberOf('shoal-d', 'shoal-d-1-3'), false)
  })
})

describe('removing static members from a group', () => {
  const consumers: Consumer[] = []
  const admin = new Admin({ clientId: 'test-static-admin', bootstrapBrokers: brokers() })
  after(async () => {
    await Promise.allSettled(consumers.map(c => c.close(true)))
    await admin.close()
  })

  async function join(groupId: string, topic: string, instanceId: string): Promise<void> {
    const consumer = new Consumer({
      clientId: `test-${instanceId}`,
      groupId,
      groupInstanceId: instanceId,
      bootstrapBrokers: brokers(),
      // Long enough that only a removal takes the member out within the test.
      sessionTimeout: 45_000,
      heartbeatInterval: 1_000
    })
    consumers.push(consumer)
    await consumer.consume({ topics: [topic] })
  }

  const instanceIds = async (groupId: string) =>
    [...((await admin.describeGroups({ groups: [groupId] })).get(groupId)?.members.values() ?? [])]
      .map(m => m.groupInstanceId)
      .sort()

  it("removes the dead dispatcher's members and keeps the others", async () => {
    const topic = uniqueName('static-members')
    const groupId = uniqueName('static-members-group')
    await createTopic(topic, { partitions: 4 })
    for (const id of ['dead-0', 'dead-1', 'alive-0']) await join(groupId, topic, id)
    await eventually(async () => ((await instanceIds(groupId)).length === 3 ? true : undefined), 30_000, 'joined')
    // The dead dispatcher's process is gone: its clients stop heartbeating without leaving (the client sends its own
    // LeaveGroup whenever it has a member id: it is told it has none).
    for (const consumer of consumers.splice(0, 2)) {
      consumer.memberId = null
      await new Promise<void>(resolve => consumer.leaveGroup(false, () => resolve()))
      await consumer.close()
    }
    assert.deepEqual(await instanceIds(groupId), ['alive-0', 'dead-0', 'dead-1'])

    const kept = await removeStaticMembers({
      connection: { brokers: brokers(), clientId: 'test-static' },
      groupId,
      remove: id => isMemberOf('dead', id),
      stillWanted: () => false,
      reason: 'a test'
    })
    assert.deepEqual(kept, [], 'nothing is removed once the dispatcher is no longer dead')

    const removed = await removeStaticMembers({
      connection: { brokers: brokers(), clientId: 'test-static' },
      groupId,
      remove: id => isMemberOf('dead', id),
      reason: 'a test'
    })
    assert.deepEqual(removed.sort(), ['dead-0', 'dead-1'])
    assert.deepEqual(await instanceIds(groupId), ['alive-0'])
  })
})
