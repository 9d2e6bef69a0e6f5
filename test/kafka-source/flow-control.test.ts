import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { Deliverer, resolveDeliveryPolicy } from '../../src/delivery/index.ts'
import type { DeliveryTarget } from '../../src/delivery/index.ts'
import { recordToEvent } from '../../src/kafka-source/index.ts'
import type { Deliver } from '../../src/kafka-source/index.ts'
import { uniqueName } from '../helpers/kafka.ts'
import { eventually } from '../helpers/wait.ts'
import { gate, startSink } from '../delivery/sink-server.ts'
import { committedOffsets, createTopic, messages, produce, runnerOf } from './helpers.ts'

describe('a member under per-sink flow control', () => {
  const cleanup: Array<() => Promise<unknown>> = []
  after(async () => {
    for (const c of cleanup.reverse()) await c().catch(() => undefined)
  })

  it('records waiting for a limit slot stay in flight (the window fills, the backlog stays in Kafka); the sink never sees more than the limit; nothing lost', async () => {
    const name = uniqueName('flow')
    await createTopic(name, 1)
    const count = 300
    const maxInFlight = 20
    const limit = 2
    const held = gate()
    let now = 0
    let most = 0
    const sink = await startSink(async () => {
      now++
      most = Math.max(most, now)
      await held.promise
      now--
      return { status: 202 }
    })
    cleanup.push(() => sink.close())
    const deliverer = new Deliverer()
    cleanup.push(() => deliverer.close())
    const target: DeliveryTarget = {
      sourceKey: `KafkaSource/default/${name}`,
      sink: { uri: sink.url },
      policy: resolveDeliveryPolicy(undefined),
      flow: { maxConcurrency: limit, adaptive: false }
    }
    const deliver: Deliver = (record, signal, wireSignal) => {
      const mapped = recordToEvent(record, { namespace: 'default', name })
      assert.equal(mapped.kind, 'event')
      return deliverer.deliver(mapped.event, target, signal, wireSignal).then(outcome => {
        if (outcome.kind === 'aborted') throw new Error('aborted')
        return outcome.kind
      })
    }
    await produce(name, messages(count, 1))
    const runner = runnerOf(name, deliver, { ordering: 'unordered', maxInFlight })
    cleanup.push(() => runner.close({ drainMs: 0 }))

    // The sink holds its answers: `limit` requests on the wire, the rest of the window waiting at the gate.
    await eventually(
      async () => {
        const partition = runner.status().members[0]?.partitions[0]
        const [flow] = deliverer.flow()
        return partition?.inFlight === maxInFlight && flow?.queued === maxInFlight - limit && sink.pending() === limit
          ? true
          : undefined
      },
      30_000,
      'a full window: the limit on the wire, the rest queued at the gate and counted in flight'
    )
    const partition = runner.status().members[0]!.partitions[0]!
    assert.equal(partition.committable, 0n, 'nothing handled, nothing committable')
    assert.equal(sink.received.length, limit)

    held.open()
    await eventually(
      async () => ((await committedOffsets(name, name, 1))[0] === BigInt(count) ? true : undefined),
      60_000,
      'every record committed'
    )
    const ids = new Set(sink.received.map(r => r.headers['ce-id']))
    assert.equal(ids.size, count, 'every record reached the sink')
    assert.ok(most <= limit, `the sink saw ${most} requests at once`)
  })
})
