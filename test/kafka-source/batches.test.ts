import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { BATCH_CONTENT_TYPE, Deliverer, resolveDeliveryPolicy } from '../../src/delivery/index.ts'
import type { DeliveryTarget } from '../../src/delivery/index.ts'
import { batchDelivery } from '../../src/kafka-source/index.ts'
import type { BatchLimits, Batching, ConsumerSpec, Outcome, SourceRecord } from '../../src/kafka-source/index.ts'
import { startSink } from '../delivery/sink-server.ts'
import type { Script, TestSink } from '../delivery/sink-server.ts'
import { uniqueName } from '../helpers/kafka.ts'
import { eventually } from '../helpers/wait.ts'
import { committedOffsets, createTopic, endOffsets, messages, produce, runnerOf } from './helpers.ts'

// Batched delivery end to end: the real broker, a real Deliverer, real HTTP sinks.

interface BatchedEvent {
  readonly id: string
  readonly subject: string
  readonly data?: unknown
  readonly data_base64?: string
  readonly knativeerrorcode?: string
}

/** The (partition, offset) of each event of a batch body, from the mapped events' ids. */
function offsetsOf(body: Buffer): Array<[number, number]> {
  return (JSON.parse(body.toString()) as BatchedEvent[]).map(e => {
    const match = /^partition:(\d+)\/offset:(\d+)$/.exec(e.id)
    assert.ok(match !== null, e.id)
    return [Number(match[1]), Number(match[2])]
  })
}

describe('batched delivery (delivery.shoal.dev/batch-*)', () => {
  const cleanup: Array<() => Promise<unknown>> = []
  after(async () => {
    for (const c of cleanup.reverse()) await c().catch(() => undefined)
  })

  async function sink(script: Script): Promise<TestSink> {
    const s = await startSink(script)
    cleanup.push(() => s.close())
    return s
  }

  /** A batching runner of topic `name` delivering to `sinkUrl` (retry 2, dead letters to `dlsUrl`). */
  function batchingRunner(
    name: string,
    limits: BatchLimits,
    sinkUrl: string,
    dlsUrl: string,
    source: Partial<ConsumerSpec>
  ): void {
    const deliverer = new Deliverer()
    cleanup.push(() => deliverer.close())
    const target: DeliveryTarget = {
      sourceKey: `KafkaSource/default/${name}`,
      sink: { uri: sinkUrl },
      policy: resolveDeliveryPolicy({ retry: 2, backoffPolicy: 'linear', backoffDelay: 'PT0.01S' }, { uri: dlsUrl })
    }
    const send = batchDelivery(deliverer, { namespace: 'default', name }, {})
    const batching: Batching = {
      limits,
      deliver: (records, signal, wireSignal) => send(records, signal, wireSignal, target)
    }
    const single = (_record: SourceRecord): Promise<Outcome> => Promise.reject(new Error('not used when batching'))
    const runner = runnerOf(name, single, source, { batching })
    cleanup.push(() => runner.close({ drainMs: 0 }))
  }

  async function committedToTheEnd(name: string, partitions: number): Promise<void> {
    const ends = await endOffsets(name, partitions)
    await eventually(
      async () => {
        const committed = await committedOffsets(name, name, partitions)
        return committed.every((c, i) => c === ends[i]) ? true : undefined
      },
      60_000,
      'offsets committed to the end of every partition'
    )
  }

  it('unordered: batches of the batch content type, each from one partition in offset order; every record once', async () => {
    const name = uniqueName('batches')
    const partitions = 3
    const count = 1_500
    await createTopic(name, partitions)
    await produce(name, messages(count, partitions))
    const main = await sink(() => ({ status: 202 }))
    const dls = await sink(() => ({ status: 200 }))
    batchingRunner(name, { maxEvents: 100, maxBytes: 1 << 20, maxWaitMs: 20 }, main.url, dls.url, {
      ordering: 'unordered',
      maxInFlight: 4
    })
    await committedToTheEnd(name, partitions)
    const seen = new Set<string>()
    for (const request of main.received) {
      assert.equal(request.headers['content-type'], BATCH_CONTENT_TYPE)
      const offsets = offsetsOf(request.body)
      assert.ok(offsets.length >= 1 && offsets.length <= 100, `${offsets.length} events`)
      const [partition] = offsets[0]!
      offsets.forEach(([p, o], i) => {
        assert.equal(p, partition, 'a batch holds one partition')
        if (i > 0) assert.equal(o, offsets[i - 1]![1] + 1, 'contiguous offsets')
        const id = `${p}/${o}`
        assert.ok(!seen.has(id), `${id} twice`)
        seen.add(id)
      })
    }
    assert.equal(seen.size, count, 'every record delivered, none twice')
    assert.ok(main.received.length < count / 10, `${main.received.length} requests for ${count} records`)
    assert.equal(dls.received.length, 0)
  })

  it('a failing sink: the whole batch is retried, then dead-lettered event by event; nothing lost', async () => {
    const name = uniqueName('batches-dls')
    await createTopic(name, 1)
    await produce(name, messages(300, 1))
    // Any batch holding record m-150 is refused every time.
    const main = await sink(request => ({
      status: offsetsOf(request.body).some(([, o]) => o === 150) ? 503 : 200,
      body: 'busy'
    }))
    const dls = await sink(() => ({ status: 200 }))
    batchingRunner(name, { maxEvents: 50, maxBytes: 1 << 20, maxWaitMs: 20 }, main.url, dls.url, {
      ordering: 'ordered'
    })
    await committedToTheEnd(name, 1)
    const refused = main.received.filter(r => offsetsOf(r.body).some(([, o]) => o === 150))
    assert.equal(refused.length, 3, 'the first attempt and two retries')
    for (const r of refused) assert.deepEqual(r.body, refused[0]!.body, 'each try sends the same batch')
    // The dead letter sink gets the refused batch's events one by one, in order, in binary mode.
    const deadOffsets = dls.received.map(r => Number(/offset:(\d+)$/.exec(String(r.headers['ce-id']))?.[1]))
    assert.deepEqual(
      deadOffsets,
      offsetsOf(refused[0]!.body).map(([, o]) => o),
      'the dead-lettered events are the refused batch, in order'
    )
    for (const r of dls.received) {
      assert.notEqual(r.headers['content-type'], BATCH_CONTENT_TYPE)
      assert.equal(r.headers['ce-knativeerrorcode'], '503')
    }
    const delivered = main.received.filter(r => !refused.includes(r)).flatMap(r => offsetsOf(r.body))
    const all = [...delivered.map(([, o]) => o), ...deadOffsets].sort((a, b) => a - b)
    assert.deepEqual(
      all,
      Array.from({ length: 300 }, (_, i) => i),
      'each record delivered or dead-lettered, once'
    )
  })

  it('ordered: one batch in flight per partition, in offset order across batches', async () => {
    const name = uniqueName('batches-ordered')
    const partitions = 2
    const count = 600
    await createTopic(name, partitions)
    await produce(name, messages(count, partitions))
    const inFlight = new Map<number, number>()
    let overlapped = 0
    const main = await sink(async request => {
      const [partition] = offsetsOf(request.body)[0]!
      const now = (inFlight.get(partition) ?? 0) + 1
      inFlight.set(partition, now)
      if (now > 1) overlapped++
      await new Promise(resolve => setTimeout(resolve, 5))
      inFlight.set(partition, (inFlight.get(partition) ?? 1) - 1)
      return { status: 200 }
    })
    const dls = await sink(() => ({ status: 200 }))
    batchingRunner(name, { maxEvents: 25, maxBytes: 1 << 20, maxWaitMs: 10 }, main.url, dls.url, {
      ordering: 'ordered',
      maxInFlight: 8
    })
    await committedToTheEnd(name, partitions)
    assert.equal(overlapped, 0, 'never two batches of one partition at the sink at once')
    const order = new Map<number, number[]>()
    for (const request of main.received) {
      for (const [p, o] of offsetsOf(request.body)) order.set(p, [...(order.get(p) ?? []), o])
    }
    for (let p = 0; p < partitions; p++) {
      assert.deepEqual(
        order.get(p),
        Array.from({ length: count / partitions }, (_, i) => i),
        `partition ${p} in offset order, each once`
      )
    }
  })
})
