import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { after, describe, it } from 'node:test'
import { SourceRunner } from '../../src/kafka-source/index.ts'
import type { SourceRecord } from '../../src/kafka-source/index.ts'
import { brokers, uniqueName } from '../helpers/kafka.ts'
import { eventually } from '../helpers/wait.ts'
import { committedOffsets, createTopic, messages, produce, runnerOf, testLog } from './helpers.ts'

const fixture = fileURLToPath(new URL('./fixtures/crash-runner.ts', import.meta.url))

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

    const child = spawn(process.execPath, [fixture, brokers().join(','), name, 'dispatcher-3'], {
      stdio: ['ignore', 'pipe', 'pipe']
    })
    // 'close', not 'exit': the lines it printed before the kill may still be in the pipe when it exits, and a
    // record it handled and committed but the test never read would never be counted. (Its log on stderr is read
    // too, or the pipe would never close.)
    child.stderr.resume()
    const exited = new Promise(resolve => child.once('close', resolve))
    cleanup.push(async () => {
      child.kill('SIGKILL')
      await exited
    })
    const before = new Set<string>()
    createInterface({ input: child.stdout }).on('line', line => {
      const [, , , value] = line.split(' ')
      if (value) before.add(value)
    })
    await eventually(async () => (before.size >= 3000 ? true : undefined), 60_000, 'the first process handling records')
    child.kill('SIGKILL')
    await exited
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
  it('starts a partition soon after its former owner died mid-hand-over, without waiting out the hand-over', async () => {
    // A process of two members whose deliveries take 3 s holds the four partitions; a third member joins, the
    // rebalance takes a partition from the first process while deliveries are on the wire (it commits the "draining" mark), and the first is
    // killed before its drain ends: it never releases. Once its members' sessions end, the group gives the second
    // member everything, and the marked partition's former owner is no longer in the group.
    const name = uniqueName('crash-handover')
    await createTopic(name, 4)
    await produce(name, messages(200, 4))
    const child = spawn(process.execPath, [fixture, brokers().join(','), name, 'dispatcher-3', '3000'], {
      stdio: ['ignore', 'pipe', 'pipe']
    })
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
    let revoked = false
    createInterface({ input: child.stderr }).on('line', line => {
      if (line.includes('partitions revoked')) revoked = true
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
    await eventually(async () => (revoked ? true : undefined), 60_000, 'a partition revoked from the first process')
    child.kill('SIGKILL')
    await exited
    await eventually(async () => (handled.size === 200 ? true : undefined), 120_000, 'every record handled')
    const starts = lines.filter(l => l.includes('starting from its last commit'))
    assert.ok(starts.length > 0, `no partition was started past a mark: ${lines.join('\n')}`)
    assert.ok(
      starts.every(l => l.includes('left the group without releasing')),
      `a partition waited out the hand-over of a former owner no longer in the group:\n${starts.join('\n')}`
    )
  })
})
