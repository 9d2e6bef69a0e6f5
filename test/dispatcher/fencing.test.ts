import assert from 'node:assert/strict'
import { once } from 'node:events'
import { after, before, describe, it } from 'node:test'
import { startDispatcher } from '../../src/dispatcher/index.ts'
import type { RunningDispatcher } from '../../src/dispatcher/index.ts'
import { startEmbeddedKafka } from '../../src/kafka/embedded/index.ts'
import type { EmbeddedKafka } from '../../src/kafka/embedded/index.ts'
import { uniqueName } from '../helpers/kafka.ts'
import { ContractWriter, TEST_BUCKETS, TEST_LIVENESS_MS } from './helpers.ts'

// A broker of its own, frozen with SIGSTOP: to the dispatcher, Kafka is cut off mid-request (no connection
// refused, no reset; requests just hang), the hardest way to lose it. The shared broker of the run must not
// be frozen, other test files use it.
describe('dispatcher self-fencing', () => {
  let kafka: EmbeddedKafka
  let pid: number
  let dispatcher: RunningDispatcher | undefined

  before(async () => {
    kafka = await startEmbeddedKafka({ brokers: 1, port: 0 })
    pid = kafka.brokers[0]!.pid!
  })

  after(async () => {
    try {
      process.kill(pid, 'SIGCONT')
    } catch {
      // already gone
    }
    await dispatcher?.close()
    await kafka?.stop()
  })

  it('stops its contract when it cannot heartbeat, and runs it again once heartbeats get through', async () => {
    const prefix = uniqueName('fence')
    dispatcher = await startDispatcher({
      brokers: kafka.bootstrapBrokers,
      prefix,
      buckets: TEST_BUCKETS,
      id: 'dispatcher-0',
      zone: 'zone-a',
      node: 'node-1',
      capacity: 10,
      livenessTimeoutMs: TEST_LIVENESS_MS
    })
    assert.equal(dispatcher.running, true)
    const writer = new ContractWriter(prefix, kafka.bootstrapBrokers)
    const placed = once(dispatcher, 'contract')
    await writer.write('dispatcher-0', 'KafkaSource/default/a', {
      slot: 'consumer',
      vreplicas: 2,
      resourceVersion: '1',
      epoch: 1
    })
    await placed
    await writer.close()

    const fenced = once(dispatcher, 'fenced')
    process.kill(pid, 'SIGSTOP')
    try {
      await fenced
      assert.equal(dispatcher.fenced, true)
      assert.equal(dispatcher.running, false)
      assert.equal(dispatcher.contract.size, 1, 'the contract is held, not forgotten')
    } finally {
      process.kill(pid, 'SIGCONT')
    }

    await once(dispatcher, 'unfenced')
    assert.equal(dispatcher.fenced, false)
    assert.equal(dispatcher.running, true)
  })
})
