import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { GROUP_SESSION_TIMEOUT_MS } from '../../src/kafka/index.ts'
import { SourceRunner } from '../../src/kafka-source/index.ts'
import type { Outcome, SourceRecord } from '../../src/kafka-source/index.ts'
import { brokers, uniqueName } from '../helpers/kafka.ts'
import { eventually } from '../helpers/wait.ts'
import { createTopic, describeGroup, messages, produce, testLog } from './helpers.ts'

const SLOW_MS = 8_000

describe('SourceRunner with a slow sink', () => {
  const cleanup: Array<() => Promise<unknown>> = []
  after(async () => {
    for (const c of cleanup.reverse()) await c().catch(() => undefined)
  })

  it('keeps its group session through deliveries longer than the session timeout, fetching no more than its window', async () => {
    assert.ok(SLOW_MS > GROUP_SESSION_TIMEOUT_MS)
    const name = uniqueName('slow')
    await createTopic(name, 4)
    const slow = new Set<string>()
    const done: string[] = []
    const deliver = async (record: SourceRecord, signal: AbortSignal): Promise<Outcome> => {
      const value = record.value!.toString()
      if (value.startsWith('slow')) {
        slow.add(value)
        await new Promise(resolve => {
          const timer = setTimeout(resolve, SLOW_MS)
          signal.addEventListener('abort', () => (clearTimeout(timer), resolve(undefined)), { once: true })
        })
      }
      done.push(value)
      return 'delivered'
    }
    const maxInFlight = 3
    const runner = new SourceRunner({
      brokers: brokers(),
      source: {
        key: `KafkaSource/default/${name}`,
        groupId: name,
        topics: [name],
        initialOffset: 'earliest',
        ordering: 'unordered',
        maxInFlight
      },
      vreplicas: 2,
      dispatcherId: 'dispatcher-0',
      deliver,
      log: testLog()
    })
    cleanup.push(() => runner.close({ drainMs: 0 }))
    const settled = await eventually(
      async () => {
        const members = runner.status().members
        return members.length === 2 && members.every(m => m.partitions.length === 2) ? members : undefined
      },
      60_000,
      'both members with two partitions'
    )
    const before = await describeGroup(name, name)

    // Partition 0 gets slow records, partition 1 (the same member's, or the other's) fast ones.
    const member0 = settled.find(m => m.partitions.some(p => p.partition === 0))!
    const sibling = member0.partitions.find(p => p.partition !== 0)!.partition
    await produce(
      name,
      messages(40, 1, 'slow').map(m => ({ ...m, partition: 0 }))
    )
    await produce(
      name,
      messages(200, 1, 'fast').map(m => ({ ...m, partition: sibling }))
    )

    // Unordered: the slow records hold their slots, and the other partition flows through the rest.
    await eventually(
      async () => (done.filter(v => v.startsWith('fast')).length === 200 ? true : undefined),
      60_000,
      'fast records'
    )
    await eventually(
      async () => (done.filter(v => v.startsWith('slow')).length >= 6 ? true : undefined),
      60_000,
      'two rounds of slow deliveries'
    )
    const now = runner.status().members
    for (const m of now) {
      const was = settled.find(s => s.groupInstanceId === m.groupInstanceId)!
      assert.equal(m.generationId, was.generationId, `${m.groupInstanceId} stayed in its generation`)
      assert.equal(m.memberId, was.memberId)
      assert.equal(m.rebalances, was.rebalances, `${m.groupInstanceId} saw no rebalance`)
      // Backpressure: what is fetched and not started stays within one fetch of the window.
      assert.ok(m.inFlight <= maxInFlight)
    }
    assert.deepEqual(await describeGroup(name, name), before, 'the coordinator shows the same members and assignment')
    const busy = now.find(m => m.groupInstanceId === member0.groupInstanceId)!
    const p0 = busy.partitions.find(p => p.partition === 0)!
    assert.ok(p0.queued <= 40, 'records of the slow partition wait in one fetch')
    const slowDone = done.filter(v => v.startsWith('slow')).length
    assert.ok(
      slow.size - slowDone <= maxInFlight - 1,
      'a slow partition holds at most maxInFlight − (partitions − 1) slots'
    )
  })
})
