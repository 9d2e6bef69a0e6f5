import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { SourceRunner } from '../../src/kafka-source/index.ts'
import type { SourceRecord } from '../../src/kafka-source/index.ts'
import { brokers, uniqueName } from '../helpers/kafka.ts'
import { eventually } from '../helpers/wait.ts'
import { startCrashProcess } from './crash-process.ts'
import { committedOffsets, createTopic, messages, produce, testLog } from './helpers.ts'

describe('SourceRunner after a crash', () => {
  const cleanup: Array<() => Promise<unknown>> = []
  after(async () => {
    for (const c of cleanup.reverse()) await c().catch(() => undefined)
  })

  it('loses nothing when its process is killed, and redelivers only from the last committed offsets', async () => {
    const name = uniqueName('crash')
    const partitions = 4
    const total = 6000
    await createTopic(name, partitions)
    await produce(name, messages(total, partitions))

    const first = startCrashProcess(name, 'dispatcher-3')
    cleanup.push(() => first.kill())
    const before = first.handled
    await eventually(async () => (before.size >= 3000 ? true : undefined), 60_000, 'the first process handling records')
    await first.kill()
    assert.ok(before.size < total, 'killed mid-stream')
    const committed = await committedOffsets(name, name, partitions)

    // The same dispatcher comes back: its static members take their partitions over at once.
    const afterCrash: SourceRecord[] = []
    const runner = new SourceRunner({
      brokers: brokers(),
      source: {
        key: `KafkaSource/default/${name}`,
        groupId: name,
        topics: [name],
        initialOffset: 'earliest',
        ordering: 'unordered'
      },
      vreplicas: 2,
      dispatcherId: 'dispatcher-3',
      deliver: async record => {
        afterCrash.push(record)
        return 'delivered'
      },
      log: testLog()
    })
    cleanup.push(() => runner.close())
    const all = new Set(before)
    let duplicates = 0
    await eventually(
      async () => {
        for (const r of afterCrash.splice(0)) {
          assert.ok(
            r.offset >= committed[r.partition]!,
            `offset ${r.offset} of partition ${r.partition} is below the commit`
          )
          if (before.has(r.value!.toString())) duplicates++
          all.add(r.value!.toString())
        }
        return all.size === total ? true : undefined
      },
      60_000,
      'every record handled by one process or the other'
    )
    process.stderr.write(`# crash: ${duplicates} records delivered again of ${before.size} handled before the kill\n`)
    // Commits every second: what is delivered again is about a second's work, not everything since the start.
    assert.ok(duplicates < before.size / 2, `${duplicates} redelivered`)
  })
})
