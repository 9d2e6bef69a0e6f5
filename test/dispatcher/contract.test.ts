import assert from 'node:assert/strict'
import { once } from 'node:events'
import { after, describe, it } from 'node:test'
import type { ContractChange } from '../../src/dispatcher/index.ts'
import { contractPartitionOf } from '../../src/store/index.ts'
import { uniqueName } from '../helpers/kafka.ts'
import { eventually } from '../helpers/wait.ts'
import { ContractWriter, TEST_BUCKETS, memberWhere, testDispatcher, testFollower } from './helpers.ts'

const placement = { slot: 'consumer', vreplicas: 3, resourceVersion: '42', epoch: 1 } as const

/** Another id whose contract shares dispatcher-1's partition, so the partition holds both. */
function neighbourOf(id: string): string {
  for (let n = 100; ; n++) {
    const other = `dispatcher-${n}`
    if (contractPartitionOf(other, TEST_BUCKETS) === contractPartitionOf(id, TEST_BUCKETS)) return other
  }
}

describe('dispatcher contracts', () => {
  const cleanup: Array<() => Promise<unknown>> = []
  after(async () => {
    for (const c of cleanup.reverse()) await c().catch(() => undefined)
  })

  it('follows its contract: a placement appears, changes its heartbeat, and goes on its tombstone', async () => {
    const prefix = uniqueName('contract')
    const dispatcher = await testDispatcher(prefix, 'dispatcher-1')
    cleanup.push(() => dispatcher.close())
    const writer = new ContractWriter(prefix)
    cleanup.push(() => writer.close())
    const follower = await testFollower(prefix)
    cleanup.push(() => follower.close())

    const changed = once(dispatcher, 'contract')
    const offset = await writer.write('dispatcher-1', 'KafkaSource/default/orders', placement)
    const [change] = (await changed) as [ContractChange]
    assert.deepEqual(change.contract.get('KafkaSource/default/orders'), {
      dispatcher: 'dispatcher-1',
      source: 'KafkaSource/default/orders',
      ...placement,
      heldSince: String(offset)
    })
    assert.equal(change.contractOffset, offset)
    assert.equal(change.running, true)
    assert.equal(dispatcher.contract.size, 1)

    // Its heartbeats report the slots the contract takes and how far it has read.
    await writer.write('dispatcher-1', 'PingSource/default/tick', { ...placement, slot: 'schedule', vreplicas: 1 })
    const member = await memberWhere(
      follower,
      'dispatcher-1',
      m => m?.used.consumers === 3 && m.used.schedules === 1,
      'used slots in a heartbeat'
    )
    assert.ok(BigInt(member?.contractOffset ?? '-1') > offset)

    // Another dispatcher's placement in the same partition is not this one's.
    await writer.write(neighbourOf('dispatcher-1'), 'KafkaSource/default/other', placement)
    const removed = once(dispatcher, 'contract')
    await writer.write('dispatcher-1', 'KafkaSource/default/orders', null)
    const [after] = (await removed) as [ContractChange]
    assert.deepEqual([...after.contract.keys()], ['PingSource/default/tick'])
  })

  it('reads its contract from the start of its partition when it starts again', async () => {
    const prefix = uniqueName('restart')
    const first = await testDispatcher(prefix, 'dispatcher-4')
    const writer = new ContractWriter(prefix)
    cleanup.push(() => writer.close())
    await writer.write('dispatcher-4', 'KafkaSource/default/a', placement)
    await writer.write('dispatcher-4', 'KafkaSource/default/b', { ...placement, vreplicas: 1 })
    await writer.write('dispatcher-4', 'KafkaSource/default/a', null)
    await writer.write(neighbourOf('dispatcher-4'), 'KafkaSource/default/c', placement)
    await eventually(async () => (first.contract.size === 1 ? true : undefined), 30_000, 'the first contract')
    await first.close()

    // Written while it was away.
    await writer.write('dispatcher-4', 'KafkaSource/default/d', { ...placement, vreplicas: 2 })
    const second = await testDispatcher(prefix, 'dispatcher-4')
    cleanup.push(() => second.close())
    // Read before start resolves: the contract is complete when the dispatcher says it is up.
    assert.deepEqual([...second.contract.keys()].sort(), ['KafkaSource/default/b', 'KafkaSource/default/d'])
    assert.equal(second.contract.get('KafkaSource/default/d')?.vreplicas, 2)
  })
})
