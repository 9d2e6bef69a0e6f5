// A hand-over whose former owner left the group (see `partition-handover.ts`): its commits are bound to the member id
// the partition was revoked under, and the next owner, seeing that id gone, starts without waiting out the hand-over.
// Against the real broker: the member ids, the coordinator's refusals and DescribeGroups are Kafka's own.
import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { readCommitNote } from '../../src/kafka-source/commit-metadata.ts'
import { DEFAULT_DRAIN_MS, REVOKE_DRAIN_MS } from '../../src/kafka-source/defaults.ts'
import { isMemberOf, removeStaticMembers } from '../../src/kafka-source/static-members.ts'
import { brokers, uniqueName } from '../helpers/kafka.ts'
import { eventually } from '../helpers/wait.ts'
import { startCrashProcess } from './crash-process.ts'
import { committedEntries, createTopic, messages, produce, runnerOf, testLog } from './helpers.ts'

/** Each partition's committed offset and what its metadata says, as the coordinator answers OffsetFetch. */
async function committedNotes(groupId: string, topic: string, partitions: number) {
  return (await committedEntries(groupId, topic, partitions)).map(p => ({
    partition: p.partitionIndex,
    offset: p.committedOffset,
    ...readCommitNote(p.committedOffset, p.metadata)
  }))
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
    const first = startCrashProcess(name, 'dispatcher-3', 10_000)
    cleanup.push(() => first.kill())
    const handled = first.handled
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
    await first.kill()
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

describe('a fenced runner', () => {
  const cleanup: Array<() => Promise<unknown>> = []
  after(async () => {
    for (const c of cleanup.reverse()) await c().catch(() => undefined)
  })

  it('cuts the drain of a runner already closing', async () => {
    // A runner closing gracefully lets its deliveries on the wire run for DEFAULT_DRAIN_MS; fenced meanwhile, it must
    // cut them within the fenced drain.
    const name = uniqueName('fenced-closing')
    await createTopic(name, 1)
    await produce(name, messages(10, 1))
    let cutAt: number | undefined
    const runner = runnerOf(
      name,
      async (_record, _signal, wire) => {
        await new Promise(resolve => wire.addEventListener('abort', resolve, { once: true }))
        cutAt ??= Date.now()
        throw new Error('cut')
      },
      { ordering: 'unordered', maxInFlight: 2 },
      { dispatcherId: 'dispatcher-9' }
    )
    await eventually(
      async () => ((runner.status().members[0]?.inFlight ?? 0) > 0 ? true : undefined),
      60_000,
      'the runner delivering'
    )
    const closed = runner.close()
    const drainEnd = Date.now() + DEFAULT_DRAIN_MS
    // Its members are out of the runner's list once the close is under way; the fence must still find them.
    await new Promise(resolve => setTimeout(resolve, 100))
    runner.fence(200)
    await closed
    assert.ok(cutAt !== undefined && cutAt < drainEnd - 2_000, 'the closing runner was cut by the fence, not its drain')
  })

  it("cuts a revoked partition's drain too, not only the partitions it owns", async () => {
    // One member's deliveries wait until cut; a second member joins and a partition is revoked mid-delivery (its
    // hand-over drains, for at most REVOKE_DRAIN_MS). The partition it keeps is then answered, so that only the
    // revoked one has deliveries on the wire, and the runner is fenced with a short drain: the revoked partition's
    // deliveries must be cut within the fenced drain, not when the hand-over's drain ends.
    const name = uniqueName('fenced-handover')
    await createTopic(name, 2)
    await produce(name, messages(20, 2))
    const lines: string[] = []
    const cutAt = new Map<number, number>()
    /** Once set, the partition whose deliveries keep waiting; the other's are answered. */
    const hold: { partition?: number } = {}
    /** Deliveries waiting, by partition. */
    const onWire = new Map<number, number>()
    const waiting = new Set<{ partition: number; answer: () => void }>()
    const answerOthers = () => {
      for (const w of waiting) {
        if (w.partition === hold.partition) continue
        waiting.delete(w)
        w.answer()
      }
    }
    const first = runnerOf(
      name,
      async (record, _signal, wire) => {
        if (hold.partition !== undefined && record.partition !== hold.partition) return 'delivered'
        onWire.set(record.partition, (onWire.get(record.partition) ?? 0) + 1)
        const answered = await new Promise<boolean>(resolve => {
          const entry = { partition: record.partition, answer: () => resolve(true) }
          waiting.add(entry)
          wire.addEventListener('abort', () => (waiting.delete(entry), resolve(false)), { once: true })
        }).finally(() => onWire.set(record.partition, onWire.get(record.partition)! - 1))
        if (answered) return 'delivered'
        if (!cutAt.has(record.partition)) cutAt.set(record.partition, Date.now())
        throw new Error('cut')
      },
      { ordering: 'unordered', maxInFlight: 4 },
      { dispatcherId: 'dispatcher-7', log: testLog(lines) }
    )
    cleanup.push(() => first.close({ drainMs: 0 }))
    await eventually(
      async () => ((first.status().members[0]?.inFlight ?? 0) >= 2 ? true : undefined),
      60_000,
      'the first member delivering both partitions'
    )
    const second = runnerOf(name, async () => 'delivered', { ordering: 'unordered' }, { dispatcherId: 'dispatcher-8' })
    cleanup.push(() => second.close())
    const revoked = await eventually(
      async () => lines.find(l => l.includes('partitions revoked') && !l.includes('"inFlight":0')),
      60_000,
      'a partition revoked with deliveries on the wire'
    )
    // At most 100 ms after the revocation: its drain would end REVOKE_DRAIN_MS after it.
    const drainEnd = Date.now() + REVOKE_DRAIN_MS
    const partition = Number(/"partitions":\["[^"]+\/(\d+)"\]/.exec(revoked)?.[1])
    assert.ok(Number.isInteger(partition), revoked)
    hold.partition = partition
    answerOthers()
    await eventually(
      async () => ([...onWire].every(([p, n]) => p === partition || n === 0) ? true : undefined),
      30_000,
      'nothing of the kept partition on the wire'
    )
    const fencedAt = Date.now()
    first.fence(200)
    await eventually(async () => (cutAt.has(partition) ? true : undefined), 30_000, "the revoked partition's cut")
    // The bound is the guarantee itself, not a speed: cut by the fence, well before the hand-over's own drain ends.
    const cut = cutAt.get(partition)!
    assert.ok(
      cut < drainEnd - 1_000,
      `the revoked partition was cut ${cut - fencedAt} ms after the fence, when its hand-over's drain ended`
    )
  })
})
