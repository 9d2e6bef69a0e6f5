// A dead dispatcher's static members taken out of a real consumer group (LeaveGroup by instance id), as the
// controllers do when they declare the dispatcher dead. The group as the coordinator describes it afterwards
// (DescribeGroups, the library's admin) is the truth: with a long session, the members would otherwise stay.
import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { isMemberOf, removeStaticMembers } from '../../src/kafka-source/index.ts'
import { brokers, createTopic, uniqueName } from '../helpers/kafka.ts'
import { StaticGroup } from '../helpers/static-group.ts'
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
  const group = new StaticGroup()
  after(() => group.close())

  it("removes the dead dispatcher's members and keeps the others", async () => {
    const topic = uniqueName('static-members')
    const groupId = uniqueName('static-members-group')
    await createTopic(topic, { partitions: 4 })
    const dead = [await group.join(groupId, topic, 'dead-0'), await group.join(groupId, topic, 'dead-1')]
    await group.join(groupId, topic, 'alive-0')
    await eventually(async () => ((await group.instanceIds(groupId)).length === 3 ? true : undefined), 30_000, 'joined')
    // The dead dispatcher's process is gone: its members stay in the group.
    for (const consumer of dead) await group.die(consumer)
    assert.deepEqual(await group.instanceIds(groupId), ['alive-0', 'dead-0', 'dead-1'])

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
    assert.deepEqual(await group.instanceIds(groupId), ['alive-0'])
  })
})
