import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { SourceRunner } from '../../src/source/index.ts'
import { eventually, uniquePrefix } from '../helpers/controllers.ts'
import {
  Collector,
  committedOffsets,
  createTopic,
  endOffsets,
  kafkaBrokers,
  messages,
  produce,
  testLog
} from './helpers.ts'

describe('SourceRunner consuming', () => {
  const cleanup: Array<() => Promise<unknown>> = []
  after(async () => {
    for (const c of cleanup.reverse()) await c().catch(() => undefined)
  })

  it('hands every one of 2,000 records over 6 partitions to deliver with 3 vreplicas, and commits them all', async () => {
    const name = uniquePrefix('all')
    await createTopic(name, 6)
    await produce(name, messages(2000, 6))
    const collector = new Collector()
    const log: string[] = []
    const runner = new SourceRunner({
      brokers: kafkaBrokers(),
      source: {
        key: `KafkaSource/default/${name}`,
        groupId: name,
        topics: [name],
        initialOffset: 'earliest',
        ordering: 'unordered'
      },
      vreplicas: 3,
      dispatcherId: 'dispatcher-0',
      deliver: collector.deliver,
      log: testLog(log)
    })
    cleanup.push(() => runner.close())
    await eventually(async () => (collector.distinct === 2000 ? true : undefined), 60_000, 'every record delivered')
    // The first member to join may take everything before the others arrive; then the group settles.
    await eventually(
      async () => {
        const counts = runner.status().members.map(m => m.partitions.length)
        return counts.length === 3 && counts.every(c => c === 2) ? true : undefined
      },
      30_000,
      'two partitions per member'
    )
    await eventually(
      async () => {
        const [committed, ends] = [await committedOffsets(name, name, 6), await endOffsets(name, 6)]
        return committed.every((o, i) => o === ends[i]) ? true : undefined
      },
      20_000,
      'offsets committed at the end of each partition'
    )
    assert.ok(!log.some(l => l.startsWith('error')), log.join('\n'))
  })
})
