import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, describe, it } from 'node:test'
import { SourceRunner } from '../../src/kafka-source/index.ts'
import type { Outcome, SourceRecord } from '../../src/kafka-source/index.ts'
import { brokers, uniqueName } from '../helpers/kafka.ts'
import { eventually } from '../helpers/wait.ts'
import { Collector, committedOffsets, createTopic, endOffsets, messages, produce, testLog } from './helpers.ts'

describe('SourceRunner consuming', () => {
  const cleanup: Array<() => Promise<unknown>> = []
  after(async () => {
    for (const c of cleanup.reverse()) await c().catch(() => undefined)
  })

  it('hands every one of 2,000 records over 6 partitions to deliver with 3 vreplicas, and commits them all', async () => {
    const name = uniqueName('all')
    await createTopic(name, 6)
    await produce(name, messages(2000, 6))
    const collector = new Collector()
    const log: string[] = []
    const runner = new SourceRunner({
      brokers: brokers(),
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
      60_000,
      'two partitions per member'
    )
    await eventually(
      async () => {
        const [committed, ends] = [await committedOffsets(name, name, 6), await endOffsets(name, 6)]
        return committed.every((o, i) => o === ends[i]) ? true : undefined
      },
      60_000,
      'offsets committed at the end of each partition'
    )
    assert.ok(!log.some(l => l.startsWith('error')), log.join('\n'))
  })

  it('keeps each partition in order in ordered mode while deliver fails and is retried', async () => {
    const name = uniqueName('ordered')
    await createTopic(name, 3)
    const produced = messages(300, 3)
    await produce(name, produced)
    const attempts = new Map<string, number>()
    const calls: SourceRecord[] = []
    const done: SourceRecord[] = []
    // Every 25th record fails twice; every record takes a random moment, so concurrent partitions interleave.
    const deliver = async (record: SourceRecord): Promise<Outcome> => {
      calls.push(record)
      const value = record.value!.toString()
      const attempt = (attempts.get(value) ?? 0) + 1
      attempts.set(value, attempt)
      await new Promise(resolve => setTimeout(resolve, Math.random() * 3))
      if (Number(value.split('-')[1]) % 25 === 0 && attempt <= 2) throw new Error(`sink refused ${value}`)
      done.push(record)
      return 'delivered'
    }
    const runner = new SourceRunner({
      brokers: brokers(),
      source: {
        key: `KafkaSource/default/${name}`,
        groupId: name,
        topics: [name],
        initialOffset: 'earliest',
        ordering: 'ordered'
      },
      vreplicas: 1,
      dispatcherId: 'dispatcher-0',
      deliver,
      log: testLog()
    })
    cleanup.push(() => runner.close())
    await eventually(async () => (done.length >= 300 ? true : undefined), 60_000, 'every record delivered')
    for (let partition = 0; partition < 3; partition++) {
      const expected = produced.filter(m => m.partition === partition).map(m => m.value)
      const inPartition = (list: SourceRecord[]): string[] =>
        list.filter(r => r.partition === partition).map(r => r.value!.toString())
      assert.deepEqual(inPartition(done), expected, `partition ${partition} delivered in order`)
      // No record of a partition is attempted before the one ahead of it has been delivered.
      const attempted = inPartition(calls)
      assert.deepEqual(
        attempted.filter((v, i) => v !== attempted[i - 1]),
        expected,
        `partition ${partition} attempted in order, retries of the same record only`
      )
    }
    assert.equal(runner.status().members[0]!.deliverErrors, 24)
  })

  it('delivers to a real HTTP sink on loopback, retrying what the sink refuses', async () => {
    const name = uniqueName('http')
    await createTopic(name, 4)
    await produce(name, messages(400, 4))
    const received = new Map<string, number>()
    let refused = 0
    const server = createServer((req, res) => {
      const chunks: Buffer[] = []
      req.on('data', chunk => chunks.push(chunk as Buffer))
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString()
        const seen = received.get(body) ?? 0
        // The sink is briefly unavailable for every tenth record's first request.
        if (Number(body.split('-')[1]) % 10 === 0 && seen === 0) {
          received.set(body, -1)
          refused++
          res.writeHead(503).end()
          return
        }
        received.set(body, Math.max(seen, 0) + 1)
        res.writeHead(202).end()
      })
    })
    await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
    cleanup.push(() => new Promise(resolve => server.close(resolve)))
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
    const deliver = async (record: SourceRecord, signal: AbortSignal): Promise<Outcome> => {
      const response = await fetch(url, {
        method: 'POST',
        body: record.value ?? Buffer.alloc(0),
        headers: { 'content-type': 'text/plain', 'ce-id': `partition:${record.partition}/offset:${record.offset}` },
        signal
      })
      await response.arrayBuffer()
      if (!response.ok) throw new Error(`sink answered ${response.status}`)
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
        maxInFlight: 20
      },
      vreplicas: 2,
      dispatcherId: 'dispatcher-0',
      deliver,
      log: testLog()
    })
    cleanup.push(() => runner.close())
    await eventually(
      async () => ([...received.values()].filter(n => n > 0).length === 400 ? true : undefined),
      60_000,
      'the sink got every record'
    )
    assert.equal(refused, 40)
    await eventually(
      async () => {
        const [committed, ends] = [await committedOffsets(name, name, 4), await endOffsets(name, 4)]
        return committed.every((o, i) => o === ends[i]) ? true : undefined
      },
      60_000,
      'every partition committed to its end'
    )
  })
})
