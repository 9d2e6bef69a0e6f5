// A hand-over whose former owner left the group (see `partition-handover.ts`): its commits are bound to the member id
// the partition was revoked under, and the next owner, seeing that id gone, starts without waiting out the hand-over.
// Against the real broker: the member ids, the coordinator's refusals and DescribeGroups are Kafka's own.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { after, describe, it } from 'node:test'
import { Admin } from '@platformatic/kafka'
import { readCommitNote } from '../../src/kafka-source/commit-metadata.ts'
import { isMemberOf, removeStaticMembers } from '../../src/kafka-source/static-members.ts'
import { brokers, uniqueName } from '../helpers/kafka.ts'
import { eventually } from '../helpers/wait.ts'
import { createTopic, messages, produce, runnerOf, testLog } from './helpers.ts'

const fixture = fileURLToPath(new URL('./fixtures/crash-runner.ts', import.meta.url))

/** Each partition's committed offset and what its metadata says, as the coordinator answers OffsetFetch. */
async function committedNotes(groupId: string, topic: string, partitions: number) {
  const admin = new Admin({ clientId: `test-notes-${groupId}`, bootstrapBrokers: brokers() })
  try {
    const [group] = await admin.listConsumerGroupOffsets({
      groups: [
        { groupId, topics: [{ name: topic, partitionIndexes: Array.from({ length: partitions }, (_, i) => i) }] }
      ]
    })
    return (group?.topics.find(t => t.name === topic)?.partitions ?? []).map(p => ({
      partition: p.partitionIndex,
      offset: p.committedOffset,
      ...readCommitNote(p.committedOffset, p.metadata)
    }))
  } finally {
    await admin.close()
  }
}

/** Takes a dispatcher's members out of the group by instance id, as the scheduler does when it declares it dead. */
function removeMembersOf(groupId: string, dispatcherId: string): Promise<string[]> {
  return removeStaticMembers({
    connection: { clientId: 'test-remove', brokers: brokers() },
    groupId,
    remove: id => isMemberOf(dispatcherId, id),
    reason: 'test: dispatcher declared dead'
  })
}

describe('a hand-over whose former owner left the group', () => {
  const cleanup: Array<() => Promise<unknown>> = []
  after(async () => {
    for (const c of cleanup.reverse()) await c().catch(() => undefined)
  })

  it('is started soon by the next owner once the marked member id is out of the group, losing nothing', async () => {
    // A process of two members whose deliveries take 10 s (past the 5 s drain) holds the four partitions; a second
    // process joins, the rebalance revokes partitions from the first while deliveries are on the wire (the mark,
    // naming the member id, is committed), and the first is killed mid-drain and removed from the group as a dead
    // dispatcher is.
    const name = uniqueName('gone-owner')
    await createTopic(name, 4)
    await produce(name, messages(200, 4))
    const child = spawn(process.execPath, [fixture, brokers().join(','), name, 'dispatcher-3', '10000'], {
      stdio: ['ignore', 'pipe', 'pipe']
    })
    child.stderr.resume()
    const exited = new Promise(resolve => child.once('close', resolve))
    cleanup.push(async () => {
      child.kill('SIGKILL')
      await exited
    })
    const handled = new Set<string>()
    createInterface({ input: child.stdout }).on('line', line => {
      const [, , , value] = line.split(' ')
      if (value) handled.add(value)
    })
    await eventually(async () => (handled.size > 0 ? true : undefined), 60_000, 'the first process delivering')
    const lines: string[] = []
    const second = runnerOf(
      name,
      async record => {
        handled.add(record.value!.toString())
        return 'delivered'
      },
      { ordering: 'unordered' },
      { dispatcherId: 'dispatcher-1', log: testLog(lines) }
    )
    cleanup.push(() => second.close())
    const marked = await eventually(
      async () => {
        const notes = await committedNotes(name, name, 4)
        const mark = notes.find(n => n.draining?.startsWith('dispatcher-3-') && n.drainingMemberId !== undefined)
        return mark
      },
      60_000,
      'a draining mark naming the first process and its member id'
    )
    child.kill('SIGKILL')
    await exited
    const removed = await removeMembersOf(name, 'dispatcher-3')
    assert.ok(removed.length > 0, 'the killed process had members in the group')
    await eventually(async () => (handled.size === 200 ? true : undefined), 120_000, 'every record handled')
    const starts = lines.filter(l => l.includes('starting from its last commit'))
    assert.ok(
      starts.length > 0,
      `no partition was started past a mark (${marked.draining} at ${marked.partition}):\n${lines.join('\n')}`
    )
    assert.ok(
      starts.every(l => l.includes('left the group without releasing')),
      `a partition waited out the hand-over of a member id no longer in the group:\n${starts.join('\n')}`
    )
    assert.ok((second.status().members[0]?.handovers.abandoned ?? 0) > 0, 'counted as abandoned')
  })

  it('is not released by its former owner once that member was removed and rejoined under another id', async () => {
    // One member whose deliveries take 4 s holds the two partitions; a second member joins and one partition is
    // revoked mid-delivery (mark committed under member id M1). The first member is then removed from the group (as
    // a dead dispatcher is) and its client rejoins under a new id: when its drain ends, its release must not go.
    const name = uniqueName('gone-release')
    await createTopic(name, 2)
    await produce(name, messages(40, 2))
    const firstLines: string[] = []
    const first = runnerOf(
      name,
      async () => {
        await new Promise(resolve => setTimeout(resolve, 4_000))
        return 'delivered'
      },
      { ordering: 'unordered', maxInFlight: 5 },
      { dispatcherId: 'dispatcher-5', log: testLog(firstLines) }
    )
    cleanup.push(() => first.close())
    await eventually(
      async () => ((first.status().members[0]?.inFlight ?? 0) > 0 ? true : undefined),
      60_000,
      'the first member delivering'
    )
    const secondLines: string[] = []
    const second = runnerOf(
      name,
      async () => 'delivered',
      { ordering: 'unordered' },
      {
        dispatcherId: 'dispatcher-6',
        log: testLog(secondLines)
      }
    )
    cleanup.push(() => second.close())
    const mark = await eventually(
      async () => (await committedNotes(name, name, 2)).find(n => n.draining === 'dispatcher-5-0'),
      60_000,
      'the draining mark of the first member'
    )
    const removed = await removeMembersOf(name, 'dispatcher-5')
    assert.deepEqual(removed, ['dispatcher-5-0'])
    const ended = (l: string) =>
      l.includes('handing over a revoked partition failed') && l.includes(`/${mark.partition}"`)
    await eventually(
      async () =>
        (first.status().members[0]?.handovers.released ?? 0) > 0 || firstLines.some(ended) ? true : undefined,
      60_000,
      "the first member ending the marked partition's hand-over"
    )
    const counts = first.status().members[0]!.handovers
    assert.equal(counts.released, 0, `a release was sent under another member id:\n${firstLines.join('\n')}`)
    assert.ok(
      firstLines.some(l => l.includes(`is not ${mark.drainingMemberId}`)),
      `the refusal names the revocation's member id:\n${firstLines.join('\n')}`
    )
    // The partition goes on: its next owner starts past the mark, the release never having come.
    await eventually(
      async () => {
        const notes = await committedNotes(name, name, 2)
        return notes.every(n => n.draining === undefined) ? true : undefined
      },
      60_000,
      'the mark cleared by the next owner'
    )
  })
})
