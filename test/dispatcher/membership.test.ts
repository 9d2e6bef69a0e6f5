import assert from 'node:assert/strict'
import { once } from 'node:events'
import { after, describe, it } from 'node:test'
import { Producer } from '@platformatic/kafka'
import { LogTailer } from '../../src/kafka/index.ts'
import type { LogRecord } from '../../src/kafka/index.ts'
import { decodeValue, encodeValue, schemaHeaders, storeNames } from '../../src/store/index.ts'
import { brokers, uniqueName } from '../helpers/kafka.ts'
import { eventually } from '../helpers/wait.ts'
import { memberWhere, testDispatcher, testFollower } from './helpers.ts'

describe('dispatcher membership', () => {
  const cleanup: Array<() => Promise<unknown>> = []
  after(async () => {
    for (const c of cleanup.reverse()) await c().catch(() => undefined)
  })

  it('heartbeats to the members topic, and a follower sees it live with its zone, node and capacities', async () => {
    const prefix = uniqueName('hb')
    const dispatcher = await testDispatcher(prefix, 'dispatcher-3', {
      zone: 'zone-b',
      node: 'node-7',
      capacity: 12,
      scheduleCapacity: 40
    })
    cleanup.push(() => dispatcher.close())
    assert.equal(dispatcher.running, true)

    const records: LogRecord[] = []
    const topic = storeNames(prefix).membersTopic
    const tailer = new LogTailer({
      connection: { brokers: brokers(), clientId: `raw-${prefix}` },
      topics: [topic],
      onRecord: r => records.push(r)
    })
    await tailer.start()
    cleanup.push(() => tailer.close())
    await eventually(async () => (records.length >= 2 ? true : undefined), 30_000, 'two heartbeats')
    const first = records[0]!
    assert.equal(first.key?.toString(), 'dispatcher-3')
    const decoded = decodeValue(first.value, first.headers)
    assert.equal(decoded.kind, 'value')
    assert.equal(first.headers.get('shoal-schema')?.toString(), '1')

    const follower = await testFollower(prefix)
    cleanup.push(() => follower.close())
    const member = follower.liveDispatchers().find(m => m.id === 'dispatcher-3')
    assert.ok(member, 'live after reading the topic')
    assert.equal(member.state, 'alive')
    assert.equal(member.zone, 'zone-b')
    assert.equal(member.node, 'node-7')
    assert.equal(member.ordinal, 3)
    assert.deepEqual(member.capacity, { consumers: 12, schedules: 40 })
    assert.deepEqual(member.used, { consumers: 0, schedules: 0 })
    assert.equal(member.incarnation, dispatcher.incarnation)
    assert.equal(member.contractOffset, '-1')
  })

  it('is declared dead after the liveness timeout when it stops without leaving, and gone at once when it leaves', async () => {
    const prefix = uniqueName('dead')
    // 10 s, not the tests' 3 s: the test asserts that a silent member is still alive right after it went silent,
    // which a starved machine could take longer than 3 s to look at.
    const liveness = 10_000
    const [crashing, leaving] = await Promise.all([
      testDispatcher(prefix, 'dispatcher-0', { livenessTimeoutMs: liveness }),
      testDispatcher(prefix, 'dispatcher-1', { livenessTimeoutMs: liveness })
    ])
    cleanup.push(
      () => crashing.close(),
      () => leaving.close()
    )
    const follower = await testFollower(prefix, liveness)
    cleanup.push(() => follower.close())
    await memberWhere(follower, 'dispatcher-0', m => m?.state === 'alive', 'dispatcher-0 alive')
    await memberWhere(follower, 'dispatcher-1', m => m?.state === 'alive', 'dispatcher-1 alive')

    const changes: string[][] = []
    follower.on('change', live => changes.push(live.map(m => m.id)))

    await leaving.close()
    await follower.barrier()
    assert.equal(follower.view.member('dispatcher-1'), undefined, 'the leaving tombstone removes it at once')
    assert.equal((await leaving.stopped).kind, 'closed')

    await crashing.close({ leave: false })
    await follower.barrier()
    assert.equal(follower.view.member('dispatcher-0')?.state, 'alive', 'silence is not death before the timeout')
    await memberWhere(follower, 'dispatcher-0', m => m?.state === 'dead', 'dispatcher-0 declared dead')
    assert.deepEqual(follower.liveDispatchers(), [])
    // The follower emits on its liveness timer, which may tick just after the view's answer changed.
    await eventually(async () => (changes.length >= 2 ? true : undefined), 30_000, 'the change to an empty live set')
    assert.deepEqual(changes, [['dispatcher-0'], []], 'one change per live set')
  })

  it('gives each start of an id a higher incarnation', async () => {
    const prefix = uniqueName('inc')
    const first = await testDispatcher(prefix, 'dispatcher-5')
    const incarnation = first.incarnation
    await first.close()
    const second = await testDispatcher(prefix, 'dispatcher-5')
    cleanup.push(() => second.close())
    assert.ok(second.incarnation > incarnation)
  })

  it('stops the older of two processes with one id for good; the newer stays live', async () => {
    const prefix = uniqueName('twins')
    const older = await testDispatcher(prefix, 'dispatcher-2', { node: 'old-node' })
    cleanup.push(() => older.close())
    const superseded = once(older, 'superseded')
    const newer = await testDispatcher(prefix, 'dispatcher-2', { node: 'new-node' })
    cleanup.push(() => newer.close())
    assert.ok(newer.incarnation > older.incarnation)

    const [event] = (await superseded) as [{ incarnation: number; by: number }]
    assert.deepEqual(event, { incarnation: older.incarnation, by: newer.incarnation })
    assert.deepEqual(await older.stopped, { kind: 'superseded', incarnation: older.incarnation, by: newer.incarnation })
    assert.equal(older.running, false)
    assert.equal(newer.running, true)

    const follower = await testFollower(prefix)
    cleanup.push(() => follower.close())
    const member = await memberWhere(follower, 'dispatcher-2', m => m?.node === 'new-node', 'the newer process')
    assert.equal(member?.incarnation, newer.incarnation)
    // The older one left silently: its leaving must not remove the newer one.
    await follower.barrier()
    assert.equal(follower.view.member('dispatcher-2')?.state, 'alive')
  })

  it("judges a heartbeat by the broker's append time, not the sender's clock", async () => {
    const prefix = uniqueName('skew')
    const honest = await testDispatcher(prefix, 'dispatcher-0')
    cleanup.push(() => honest.close())
    // A 10 s timeout, still far below the minute of skew: the heartbeat must look alive after the send and the
    // barrier, which a starved machine could take longer than the tests' 3 s for.
    const follower = await testFollower(prefix, 10_000)
    cleanup.push(() => follower.close())
    await eventually(async () => (follower.view.isReady() ? true : undefined), 30_000, 'the view ready')
    // A dispatcher whose clock is a minute behind: its heartbeat is as fresh as anyone's.
    const producer = new Producer({ clientId: `skewed-${prefix}`, bootstrapBrokers: brokers() })
    cleanup.push(() => producer.close())
    const record = {
      id: 'dispatcher-9',
      incarnation: 1,
      ordinal: 9,
      zone: 'zone-a',
      node: 'node-1',
      capacity: { consumers: 1, schedules: 1 },
      used: { consumers: 0, schedules: 0 },
      contractOffset: '-1',
      startedAt: new Date().toISOString()
    }
    await producer.send({
      messages: [
        {
          topic: storeNames(prefix).membersTopic,
          partition: 0,
          key: Buffer.from('dispatcher-9'),
          value: encodeValue(record),
          headers: schemaHeaders(),
          timestamp: BigInt(Date.now() - 60_000)
        }
      ],
      acks: 1
    })
    await follower.barrier()
    assert.equal(follower.view.member('dispatcher-9')?.state, 'alive')
  })
})
