// The broker settings a dispatcher warns of at start (src/kafka/broker-settings.ts): judged purely, and read from
// the run's real broker (one broker: Kafka's default stays, and there is no follower to wait for).
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { readBrokerSettings, unsafeBrokerSettings } from '../../src/kafka/index.ts'
import { brokers } from '../helpers/kafka.ts'
import {
  EMBEDDED_ELECTION_MS,
  EMBEDDED_LAG_MS,
  EMBEDDED_QUORUM_FETCH_MS,
  EMBEDDED_SESSION_MS
} from '../../src/kafka/embedded/config.ts'
import { fenceAfterOf, heartbeatIntervalOf } from '../../src/dispatcher/index.ts'

/** The default 10 s liveness timeout: fenced 5 s after the newest acked heartbeat, sent up to 1 s before a failover. */
const DEFAULT = { fenceAfterMs: 5_000, heartbeatIntervalMs: 1_000 }
/** The lab's 6 s liveness timeout. */
const LAB = { fenceAfterMs: fenceAfterOf(6_000), heartbeatIntervalMs: heartbeatIntervalOf(6_000) }

const settings = (lag: string, session = '2000') =>
  new Map([
    [
      '1',
      new Map([
        ['replica.lag.time.max.ms', '2000'],
        ['broker.session.timeout.ms', '2000']
      ])
    ],
    [
      '2',
      new Map([
        ['replica.lag.time.max.ms', lag],
        ['broker.session.timeout.ms', session]
      ])
    ]
  ])

test("Kafka's default replica.lag.time.max.ms (30 s) is unsafe for a dispatcher fencing after 5 s", () => {
  const unsafe = unsafeBrokerSettings(settings('30000'), DEFAULT)
  assert.equal(unsafe.length, 1)
  assert.equal(unsafe[0]!.name, 'replica.lag.time.max.ms')
  assert.equal(unsafe[0]!.broker, '2')
  // The budget is the fence time less one heartbeat interval: 4 s; the leader checks its ISR every half of the
  // setting, so a dead follower may hold acks=all for 1.5 times it.
  assert.match(unsafe[0]!.problem, /below 2667 ms/)
  assert.match(
    unsafe[0]!.problem,
    /at least 112501 ms/,
    '45 s of hold needs more than 112.5 s of liveness (a 40 % budget)'
  )
  assert.equal(unsafeBrokerSettings(settings('3000'), DEFAULT).length, 1, '4.5 s is not below 4 s')
  assert.equal(unsafeBrokerSettings(settings('2667'), DEFAULT).length, 1, '4000.5 ms is not below 4 s')
  assert.deepEqual(unsafeBrokerSettings(settings('2666'), DEFAULT), [])
  assert.deepEqual(
    unsafeBrokerSettings(settings('2666'), { fenceAfterMs: 5_000, heartbeatIntervalMs: 2_000 }).map(u => u.broker),
    ['1', '2'],
    'a longer heartbeat interval leaves less of the fence time: 3 s, which 1.5 × 2 s is not below either'
  )
  assert.deepEqual(
    unsafeBrokerSettings(
      new Map([
        ['1', new Map()],
        ['2', new Map()]
      ]),
      DEFAULT
    ),
    [],
    'nothing to judge'
  )
  assert.deepEqual(
    unsafeBrokerSettings(new Map([['1', new Map([['replica.lag.time.max.ms', '30000']])]]), DEFAULT),
    [],
    'one broker has no followers'
  )
})

test("Kafka's default broker.session.timeout.ms (9 s) is unsafe: a dead leader keeps the heartbeats' partition that long", () => {
  const unsafe = unsafeBrokerSettings(settings('2000', '9000'), DEFAULT)
  assert.deepEqual(
    unsafe.map(u => [u.broker, u.name]),
    [['2', 'broker.session.timeout.ms']]
  )
  assert.match(unsafe[0]!.problem, /below 4000 ms/)
  assert.equal(unsafeBrokerSettings(settings('2000', '4000'), DEFAULT).length, 1, 'equal is not below')
  assert.deepEqual(unsafeBrokerSettings(settings('2000', '3999'), DEFAULT), [])
})

test("a lost active controller holds the heartbeats for the quorum's failover, and its successor's session timeout", () => {
  const quorum = (fetch?: string, election?: string) =>
    new Map(
      ['1', '2'].map(id => [
        id,
        new Map([
          ['replica.lag.time.max.ms', '1500'],
          ['broker.session.timeout.ms', '2000'],
          ...(fetch === undefined ? [] : [['controller.quorum.fetch.timeout.ms', fetch] as [string, string]]),
          ...(election === undefined ? [] : [['controller.quorum.election.timeout.ms', election] as [string, string]])
        ])
      ])
    )
  // Kafka's quorum defaults with a 2 s session: 2 + 2 × 1 + 2 s.
  const unsafe = unsafeBrokerSettings(quorum('2000', '1000'), DEFAULT)
  assert.deepEqual(
    unsafe.map(u => [u.broker, u.value]),
    [
      ['1', '2000 + 2 × 1000 + 2000'],
      ['2', '2000 + 2 × 1000 + 2000']
    ]
  )
  assert.match(unsafe[0]!.problem, /replaced up to 4000 ms later/)
  assert.match(unsafe[0]!.problem, /holds them 6000 ms/)
  assert.match(unsafe[0]!.problem, /below 4000 ms/)
  assert.match(unsafe[0]!.problem, /at least 15001 ms/)
  assert.equal(unsafeBrokerSettings(quorum('1000', '500'), DEFAULT).length, 2, 'equal to the budget: not below')
  assert.deepEqual(unsafeBrokerSettings(quorum('999', '500'), DEFAULT), [])
  assert.equal(
    unsafeBrokerSettings(quorum(undefined, '500'), DEFAULT).length,
    2,
    'a missing one is taken at its default'
  )
  assert.deepEqual(
    unsafeBrokerSettings(quorum(undefined, undefined), DEFAULT),
    [],
    'neither reported: nothing to judge'
  )
})

test("the embedded cluster's failover settings: safe for the default liveness timeout; the lab's 6 s only alone", () => {
  const embedded = new Map(
    ['1', '2', '3'].map(id => [
      id,
      new Map([
        ['replica.lag.time.max.ms', String(EMBEDDED_LAG_MS)],
        ['broker.session.timeout.ms', String(EMBEDDED_SESSION_MS)],
        ['controller.quorum.fetch.timeout.ms', String(EMBEDDED_QUORUM_FETCH_MS)],
        ['controller.quorum.election.timeout.ms', String(EMBEDDED_ELECTION_MS)]
      ])
    ])
  )
  assert.deepEqual(unsafeBrokerSettings(embedded, DEFAULT), [])
  // With the lab's 6 s, each hold alone is within the 2.4 s budget; a node that was the active controller and the
  // heartbeats' leader is not (3.8 s), and the check says so.
  assert.deepEqual(
    [...new Set(unsafeBrokerSettings(embedded, LAB).map(u => u.name))],
    ['controller.quorum.fetch.timeout.ms + 2 × controller.quorum.election.timeout.ms + broker.session.timeout.ms']
  )
})

test('the settings are read from the real broker', async () => {
  const read = await readBrokerSettings({ brokers: brokers(), clientId: 'test-broker-settings' })
  assert.equal(read.size, 1)
  const [lag] = [...read.values()].map(c => c.get('replica.lag.time.max.ms'))
  assert.equal(lag, '30000', "Kafka's default: the embedded single broker leaves it")
  const [fetch] = [...read.values()].map(c => c.get('controller.quorum.fetch.timeout.ms'))
  assert.equal(fetch, '2000', 'a broker reports the quorum settings too')
  assert.deepEqual(unsafeBrokerSettings(read, DEFAULT), [], 'one broker: nothing to warn of')
})
