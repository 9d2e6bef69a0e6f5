import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { SourceRunner } from '../../src/kafka-source/index.ts'
import type { ConsumerSpec, Outcome, SourceRecord } from '../../src/kafka-source/index.ts'
import { brokers, uniqueName } from '../helpers/kafka.ts'
import { eventually } from '../helpers/wait.ts'
import {
  Collector,
  committedOffsets,
  createTopic,
  endOffsets,
  messages,
  produce,
  runnerOf,
  testLog
} from './helpers.ts'

describe('SourceRunner close and resume', () => {
  const cleanup: Array<() => Promise<unknown>> = []
  after(async () => {
    for (const c of cleanup.reverse()) await c().catch(() => undefined)
  })

  it('drains in-flight deliveries and commits on close; a new runner resumes after them with no redelivery', async () => {
    const name = uniqueName('resume')
    const partitions = 4
    await createTopic(name, partitions)
    await produce(name, messages(800, partitions))
    const source: ConsumerSpec = {
      key: `KafkaSource/default/${name}`,
      groupId: name,
      topics: [name],
      initialOffset: 'earliest',
      ordering: 'unordered',
      maxInFlight: 8
    }
    const first = new Collector()
    let started = 0
    const slowly = async (record: SourceRecord): Promise<Outcome> => {
      started++
      await new Promise(resolve => setTimeout(resolve, 30))
      first.record(record)
      return 'delivered'
    }
    const a = new SourceRunner({
      brokers: brokers(),
      source,
      vreplicas: 2,
      dispatcherId: 'dispatcher-0',
      deliver: slowly,
      log: testLog()
    })
    cleanup.push(() => a.close())
    await eventually(async () => (first.distinct >= 200 ? true : undefined), 60_000, 'a part of the records')
    await a.close({ drainMs: 10_000 })
    assert.equal(first.calls.length, started, 'every started delivery finished before close returned')
    const handled = first.distinct
    assert.ok(handled < 800)
    const committed = await committedOffsets(name, name, partitions)
    assert.equal(
      committed.reduce((n, o) => n + Number(o), 0),
      handled,
      'the committed offsets cover exactly what was handled'
    )

    const second = new Collector()
    const b = new SourceRunner({
      brokers: brokers(),
      source,
      vreplicas: 2,
      dispatcherId: 'dispatcher-0',
      deliver: second.deliver,
      log: testLog()
    })
    cleanup.push(() => b.close())
    await eventually(
      async () => (second.distinct === 800 - handled ? true : undefined),
      60_000,
      'the rest of the records'
    )
    for (const call of second.calls)
      assert.ok(!first.has(call.value!.toString()), `${String(call.value)} delivered again`)
    await eventually(
      async () => {
        const [now, ends] = [await committedOffsets(name, name, partitions), await endOffsets(name, partitions)]
        return now.every((o, i) => o === ends[i]) ? true : undefined
      },
      60_000,
      'every partition committed to its end'
    )
  })

  it('restarted under the same dispatcher id without leaving, takes its partitions back without a rebalance', async () => {
    const name = uniqueName('restart')
    await createTopic(name, 4)
    const source: ConsumerSpec = {
      key: `KafkaSource/default/${name}`,
      groupId: name,
      topics: [name],
      initialOffset: 'earliest',
      ordering: 'ordered'
    }
    const collector = new Collector()
    const start = (): SourceRunner =>
      new SourceRunner({
        brokers: brokers(),
        source,
        vreplicas: 2,
        dispatcherId: 'dispatcher-7',
        deliver: collector.deliver,
        log: testLog()
      })
    const a = start()
    cleanup.push(() => a.close())
    const before = await eventually(
      async () => {
        const members = a.status().members
        return members.length === 2 && members.every(m => m.partitions.length === 2) ? members : undefined
      },
      60_000,
      'two members with two partitions each'
    )
    await a.close({ leaveGroup: false })
    const b = start()
    cleanup.push(() => b.close({ leaveGroup: true }))
    const after = await eventually(
      async () => {
        const members = b.status().members
        return members.length === 2 && members.every(m => m.partitions.length === 2) ? members : undefined
      },
      60_000,
      'the same members back'
    )
    for (const [i, m] of after.entries()) {
      assert.equal(m.generationId, before[i]!.generationId, `${m.groupInstanceId} rejoined in the same generation`)
      assert.deepEqual(
        m.partitions.map(p => p.partition),
        before[i]!.partitions.map(p => p.partition),
        `${m.groupInstanceId} got its partitions back`
      )
    }
    await produce(name, messages(40, 4))
    await eventually(async () => (collector.distinct === 40 ? true : undefined), 60_000, 'records after the restart')
  })
  it('cuts requests still on the wire once the drain is over, and commits only what was handled', async () => {
    const name = uniqueName('cut')
    await createTopic(name, 1)
    await produce(name, messages(5, 1))
    let started = 0
    // A sink that never answers: only the wire signal ends a delivery.
    const deliver = (_record: SourceRecord, _signal: AbortSignal, wire: AbortSignal): Promise<Outcome> => {
      started++
      return new Promise((_, reject) => wire.addEventListener('abort', () => reject(new Error('cut')), { once: true }))
    }
    const runner = runnerOf(name, deliver, { ordering: 'unordered' })
    await eventually(async () => (started === 5 ? true : undefined), 60_000, 'five deliveries on the wire')
    await runner.close({ drainMs: 300, leaveGroup: true })
    assert.deepEqual(await committedOffsets(name, name, 1), [0n], 'nothing handled, nothing committed past')
  })
})
