import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import {
  ConnectionPool,
  encodeConsumerProtocolAssignment,
  encodeConsumerProtocolSubscription,
  findCoordinatorV6,
  joinGroupV9,
  syncGroupV5
} from '@platformatic/kafka'
import type { SourceRunner } from '../../src/kafka-source/index.ts'
import { brokers, uniqueName } from '../helpers/kafka.ts'
import { eventually } from '../helpers/wait.ts'
import { Collector, createTopic, describeGroup, messages, produce, runnerOf } from './helpers.ts'

const PARTITIONS = 4

/**
 * The group as a cooperative move leaves it when its owner is closed between the two rounds: Stable, generation 1,
 * one static member (`dispatcher-0-0`, the instance id the runner's member will use) holding partitions 0 and 1,
 * and partitions 2 and 3 held by nobody. Made with the protocol's own requests, as that owner's last round did.
 */
async function strandGroup(groupId: string, topic: string): Promise<void> {
  const [host, port] = brokers()[0]!.split(':')
  const pool = new ConnectionPool(`${groupId}-former-owner`)
  try {
    const bootstrap = await pool.get({ host: host!, port: Number(port) })
    // A fresh broker answers COORDINATOR_NOT_AVAILABLE until its offsets topic is up.
    const coordinator = await eventually(
      () =>
        findCoordinatorV6.api
          .async(bootstrap, 0, [groupId])
          .then(found => found.coordinators[0])
          .catch(() => undefined),
      30_000,
      'the group coordinator'
    )
    const connection = await pool.get({ host: coordinator.host, port: coordinator.port })
    const subscription = encodeConsumerProtocolSubscription({
      version: 1,
      topics: [topic],
      userData: Buffer.from([0xff, 0xff, 0xff, 0xff]),
      ownedPartitions: []
    })
    // …and NOT_COORDINATOR while it loads the group's partition of that topic.
    const joined = await eventually(
      () =>
        joinGroupV9.api
          .async(connection, groupId, 30_000, 10_000, '', 'dispatcher-0-0', 'consumer', [
            { name: 'cooperative-sticky', metadata: subscription }
          ])
          .catch(() => undefined),
      30_000,
      'the former owner in its group'
    )
    assert.equal(joined.leader, joined.memberId, 'the former owner leads its group')
    await syncGroupV5.api.async(
      connection,
      groupId,
      joined.generationId,
      joined.memberId,
      'dispatcher-0-0',
      'consumer',
      'cooperative-sticky',
      [
        {
          memberId: joined.memberId,
          assignment: encodeConsumerProtocolAssignment({
            version: 1,
            assignedPartitions: [{ topic, partitions: [0, 1] }]
          })
        }
      ]
    )
  } finally {
    await pool.close()
  }
}

describe('partitions a stable group holds with nobody', () => {
  const runners: SourceRunner[] = []
  after(async () => {
    for (const runner of runners) await runner.close().catch(() => undefined)
  })

  it('are assigned again: the member that replaces the former owner leads, finds them, and has the group rebalance', async () => {
    const name = uniqueName('stranded')
    await createTopic(name, PARTITIONS)
    await strandGroup(name, name)
    const before = await describeGroup(name, name)
    assert.equal(before.state, 'Stable')
    assert.deepEqual([...before.members.values()], [[0, 1]], 'partitions 2 and 3 held by nobody to begin with')

    await produce(name, messages(400, PARTITIONS))
    const sink = new Collector()
    // The former owner's instance id comes back (the same dispatcher, a new member): the coordinator hands it the
    // stored assignment without a rebalance, so nothing but the leader's look gives 2 and 3 to anyone.
    const runner = runnerOf(name, sink.deliver, { ordering: 'unordered' })
    runners.push(runner)
    await eventually(async () => (sink.distinct === 400 ? true : undefined), 60_000, 'every record delivered')
    assert.deepEqual(new Set(sink.calls.map(r => r.partition)), new Set([0, 1, 2, 3]))
    const after = await describeGroup(name, name)
    assert.deepEqual(after.members.get('dispatcher-0-0'), [0, 1, 2, 3])
    const repairs = runner.status().members.reduce((n, m) => n + m.strandedRepairs, 0)
    assert.ok(repairs >= 1, `the leader counted its repair (${repairs})`)
  })
})
