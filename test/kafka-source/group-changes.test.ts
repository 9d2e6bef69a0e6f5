// Group changes the hand-over and the member must get right beyond scale steps: a member that is closing when a
// rebalance takes its partitions, and partitions added to a topic while members run.
import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { Admin } from '@platformatic/kafka'
import type { Outcome, SourceRecord } from '../../src/kafka-source/index.ts'
import { brokers, uniqueName } from '../helpers/kafka.ts'
import { eventually } from '../helpers/wait.ts'
import { Collector, createTopic, messages, produce, runnerOf } from './helpers.ts'

/**
 * A sink that takes 4 s a record — longer than the two rebalance rounds that move a partition, shorter than the
 * 5 s drain — and notes any record in delivery on two members at once.
 */
class SlowSink {
  readonly overlaps: string[] = []
  /** `partition:offset` → times delivered. */
  readonly deliveries = new Map<string, number>()
  readonly #active = new Map<string, string>()

  deliver(who: string) {
    return async (record: SourceRecord): Promise<Outcome> => {
      const id = `${record.partition}:${record.offset}`
      if (this.#active.has(id)) this.overlaps.push(`${id} on ${this.#active.get(id)} and ${who}`)
      this.#active.set(id, who)
      await new Promise(resolve => setTimeout(resolve, 4_000))
      this.#active.delete(id)
      this.deliveries.set(id, (this.deliveries.get(id) ?? 0) + 1)
      return 'delivered'
    }
  }
}

describe('a KafkaSource group changing under its members', () => {
  const cleanup: Array<() => Promise<unknown>> = []
  after(async () => {
    for (const c of cleanup.reverse()) await c().catch(() => undefined)
  })

  it('hands over the partitions of a member that is closing: no record in delivery on two members at once', async () => {
    const name = uniqueName('close-revoke')
    await createTopic(name, 2)
    await produce(name, messages(6, 2))
    const sink = new SlowSink()
    const first = runnerOf(name, sink.deliver('dispatcher-0'))
    cleanup.push(() => first.close())
    await eventually(
      async () => (first.status().members[0]?.inFlight === 2 ? true : undefined),
      30_000,
      'both partitions in delivery on the first member'
    )
    // The first member starts closing (a 10 s drain) and a second joins meanwhile: the rebalance revokes the
    // closing member's partitions while their deliveries are on the wire.
    const closing = first.close({ drainMs: 10_000, leaveGroup: true })
    const second = runnerOf(name, sink.deliver('dispatcher-1'), {}, { dispatcherId: 'dispatcher-1' })
    cleanup.push(() => second.close({ leaveGroup: true }))
    await closing
    await eventually(async () => (sink.deliveries.size === 6 ? true : undefined), 120_000, 'every record delivered')
    assert.deepEqual(sink.overlaps, [], 'records in delivery on two members at once')
  })

  it('hands a partition over on a scale-up: its next owner starts after the former owner’s requests are answered', async () => {
    const name = uniqueName('handover')
    await createTopic(name, 2)
    await produce(name, messages(6, 2))
    const sink = new SlowSink()
    const first = runnerOf(name, sink.deliver('dispatcher-0'))
    cleanup.push(() => first.close({ leaveGroup: true }))
    await eventually(
      async () => (first.status().members[0]?.inFlight === 2 ? true : undefined),
      30_000,
      'both partitions in delivery on the first member'
    )
    const second = runnerOf(name, sink.deliver('dispatcher-1'), {}, { dispatcherId: 'dispatcher-1' })
    cleanup.push(() => second.close({ leaveGroup: true }))
    await eventually(async () => (sink.deliveries.size === 6 ? true : undefined), 120_000, 'every record delivered')
    assert.deepEqual(sink.overlaps, [], 'records in delivery on two members at once')
    assert.deepEqual(
      [...sink.deliveries].filter(([, n]) => n > 1),
      [],
      'records delivered twice'
    )
    const moved = second.status().members[0]?.handovers.awaited ?? 0
    assert.equal(moved, 1, 'the second member started its partition at the first one’s release')
  })

  it('passes on what it handled past a record stuck at the head: the next owner delivers that record, none of the rest', async () => {
    // Unordered: the member delivers past offset 0, which its sink never answers, so the commit stays at 0. Its
    // commit's metadata names 1–199 handled; without it the next owner delivers all 200 again.
    const name = uniqueName('stuck-head')
    await createTopic(name, 1)
    await produce(name, messages(200, 1))
    const first = new Collector()
    const stuck = (record: SourceRecord, signal: AbortSignal, wire: AbortSignal): Promise<Outcome> => {
      if (record.offset !== 0n) return first.deliver(record)
      return new Promise((_, reject) => wire.addEventListener('abort', () => reject(new Error('cut')), { once: true }))
    }
    const runner = runnerOf(name, stuck, { ordering: 'unordered' })
    cleanup.push(() => runner.close({ leaveGroup: true }))
    await eventually(async () => (first.distinct === 199 ? true : undefined), 60_000, 'offsets 1–199 delivered')
    await runner.close({ drainMs: 500, leaveGroup: true })

    const second = new Collector()
    const next = runnerOf(name, second.deliver, { ordering: 'unordered' }, { dispatcherId: 'dispatcher-1' })
    cleanup.push(() => next.close({ leaveGroup: true }))
    await eventually(async () => (second.has('m-0') ? true : undefined), 60_000, 'the stuck record delivered')
    await eventually(
      async () => ((next.status().members[0]?.partitions[0]?.skipped ?? 0) === 199 ? true : undefined),
      30_000,
      () =>
        `199 records skipped (status: ${JSON.stringify(next.status().members[0]?.partitions, (_, v: unknown) => (typeof v === 'bigint' ? String(v) : v))})`
    )
    assert.deepEqual(
      second.calls.map(r => r.offset),
      [0n],
      'the next owner delivers only the record its former owner never handled'
    )
  })

  it('gives a member that joins a full group its share (the client’s own assignor left it with none)', async () => {
    const name = uniqueName('join-full')
    await createTopic(name, 12)
    const collector = new Collector()
    const first = runnerOf(name, collector.deliver, {}, { vreplicas: 4 })
    cleanup.push(() => first.close({ leaveGroup: true }))
    const shares = (runner: typeof first) => runner.status().members.map(m => m.partitions.length)
    await eventually(
      async () => (shares(first).join() === '3,3,3,3' ? true : undefined),
      60_000,
      'four members holding three partitions each'
    )
    const second = runnerOf(name, collector.deliver, {}, { dispatcherId: 'dispatcher-1' })
    cleanup.push(() => second.close({ leaveGroup: true }))
    await eventually(
      async () => {
        const all = [...shares(first), ...shares(second)]
        return all.length === 5 && all.reduce((a, b) => a + b, 0) === 12 && Math.min(...all) >= 2 ? true : undefined
      },
      60_000,
      'five members holding two or three partitions each'
    )
  })

  for (const vreplicas of [1, 2]) {
    it(`delivers the records of partitions added to the topic while ${vreplicas} member(s) run`, async () => {
      const name = uniqueName(`grow-${vreplicas}`)
      await createTopic(name, 2)
      const collector = new Collector()
      const runner = runnerOf(name, collector.deliver, {}, { vreplicas })
      cleanup.push(() => runner.close({ leaveGroup: true }))
      await produce(name, [
        { partition: 0, value: 'p0' },
        { partition: 1, value: 'p1' }
      ])
      await eventually(async () => (collector.distinct === 2 ? true : undefined), 60_000, 'the first partitions')
      const admin = new Admin({ clientId: `${name}-admin`, bootstrapBrokers: brokers() })
      try {
        await admin.createPartitions({ topics: [{ name, count: 4 }] })
      } finally {
        await admin.close()
      }
      await produce(name, [
        { partition: 2, value: 'p2' },
        { partition: 3, value: 'p3' }
      ])
      await eventually(async () => (collector.distinct === 4 ? true : undefined), 60_000, 'the added partitions')
      const owned = runner.status().members.flatMap(m => m.partitions.map(p => p.partition))
      assert.deepEqual(owned.sort(), [0, 1, 2, 3])
    })
  }
})
