import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { SourceRunner, commitInitialOffsets } from '../../src/kafka-source/index.ts'
import type { Outcome, SourceRecord } from '../../src/kafka-source/index.ts'
import { brokers, uniqueName } from '../helpers/kafka.ts'
import { eventually } from '../helpers/wait.ts'
import {
  Collector,
  committedOffsets,
  createTopic,
  describeGroup,
  endOffsets,
  messages,
  produce,
  testLog
} from './helpers.ts'

describe('SourceRunner scaling', () => {
  const cleanup: Array<() => Promise<unknown>> = []
  after(async () => {
    for (const c of cleanup.reverse()) await c().catch(() => undefined)
  })

  it('created at latest with zero vreplicas, delivers the record that wakes it once scaled to one', async () => {
    const name = uniqueName('wake')
    await createTopic(name, 3)
    await produce(name, messages(30, 3, 'before'))
    const result = await commitInitialOffsets({
      brokers: brokers(),
      groupId: name,
      topics: [name],
      initialOffset: 'latest'
    })
    assert.equal(result.committed.length, 3)
    assert.deepEqual(await committedOffsets(name, name, 3), [10n, 10n, 10n])
    const again = await commitInitialOffsets({
      brokers: brokers(),
      groupId: name,
      topics: [name],
      initialOffset: 'earliest'
    })
    assert.deepEqual(
      again,
      { committed: [], existing: 3, groupActive: false },
      'a partition with an offset is left alone'
    )

    const collector = new Collector()
    const runner = new SourceRunner({
      brokers: brokers(),
      source: {
        key: `KafkaSource/default/${name}`,
        groupId: name,
        topics: [name],
        initialOffset: 'latest',
        ordering: 'ordered'
      },
      vreplicas: 0,
      dispatcherId: 'dispatcher-0',
      deliver: collector.deliver,
      log: testLog()
    })
    cleanup.push(() => runner.close())
    assert.deepEqual(runner.status().members, [])
    // The event that wakes the source is produced while nothing consumes it.
    await produce(name, [{ partition: 1, value: 'wake-up' }])
    await runner.setVReplicas(1)
    await eventually(async () => (collector.has('wake-up') ? true : undefined), 60_000, 'the waking record')
    assert.equal(collector.calls.length, 1, 'nothing from before the source existed')
  })

  it('commitInitialOffsets at earliest, and refuses a topic that does not exist', async () => {
    const name = uniqueName('earliest')
    await createTopic(name, 2)
    await produce(name, messages(10, 2))
    const result = await commitInitialOffsets({
      brokers: brokers(),
      groupId: name,
      topics: [name],
      initialOffset: 'earliest'
    })
    assert.equal(result.committed.length, 2)
    assert.deepEqual(await committedOffsets(name, name, 2), [0n, 0n])
    await assert.rejects(
      commitInitialOffsets({
        brokers: brokers(),
        groupId: name,
        topics: [`${name}-missing`],
        initialOffset: 'latest'
      }),
      { code: 'SHOAL_KAFKA', retriable: true }
    )
  })

  it('loses nothing while scaled 1 → 3 → 1 during consumption, and stops only the members it removes', async () => {
    const name = uniqueName('scale')
    const partitions = 6
    await createTopic(name, partitions)
    const collector = new Collector()
    const deliver = async (record: SourceRecord): Promise<Outcome> => {
      await new Promise(resolve => setTimeout(resolve, 20))
      collector.record(record)
      return 'delivered'
    }
    const runner = new SourceRunner({
      brokers: brokers(),
      source: {
        key: `KafkaSource/default/${name}`,
        groupId: name,
        topics: [name],
        initialOffset: 'earliest',
        ordering: 'unordered',
        maxInFlight: 10
      },
      vreplicas: 1,
      dispatcherId: 'dispatcher-0',
      deliver,
      log: testLog()
    })
    cleanup.push(() => runner.close())

    // Records keep arriving throughout the scaling.
    const total = 3000
    let producing = true
    const producer = (async () => {
      for (let i = 0; i < total; i += 100) {
        await produce(
          name,
          messages(100, partitions, 'r').map((m, j) => ({ ...m, value: `r-${i + j}` }))
        )
        if (!producing) break
      }
    })()
    await eventually(async () => (collector.distinct >= 300 ? true : undefined), 60_000, 'first records')
    await runner.setVReplicas(3)
    await eventually(
      async () => (runner.status().members.every(m => m.partitions.length === 2) ? true : undefined),
      60_000,
      'three members sharing the partitions'
    )
    const first = runner.status().members[0]!
    await runner.setVReplicas(1)
    // The stopped static members left by their instance ids: gone from the group as soon as they closed, so
    // their partitions move now rather than after a session timeout.
    const left = await describeGroup(name, name)
    assert.equal(
      left.members.has('dispatcher-0-1') || left.members.has('dispatcher-0-2'),
      false,
      [...left.members.keys()].join()
    )
    await eventually(
      async () => (runner.status().members[0]!.partitions.length === partitions ? true : undefined),
      60_000,
      'the remaining member takes every partition'
    )
    assert.equal(runner.status().members[0]!.memberId, first.memberId, 'the first member kept running throughout')
    await producer
    producing = false
    await eventually(async () => (collector.distinct === total ? true : undefined), 60_000, 'every record handled')
    const group = await describeGroup(name, name)
    assert.deepEqual([...group.members.keys()], ['dispatcher-0-0'])
    await eventually(
      async () => {
        const [committed, ends] = [await committedOffsets(name, name, partitions), await endOffsets(name, partitions)]
        return committed.every((o, i) => o === ends[i]) ? true : undefined
      },
      60_000,
      'every partition committed to its end'
    )
    process.stderr.write(`# scaling 1 → 3 → 1: ${collector.duplicates} duplicates of ${total} records\n`)
  })
})
