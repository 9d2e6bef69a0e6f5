// The broker settings a dispatcher warns of at start (src/kafka/broker-settings.ts): judged purely, and read from
// the run's real broker (one broker: Kafka's default stays, and there is no follower to wait for).
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { readBrokerSettings, unsafeBrokerSettings } from '../../src/kafka/index.ts'
import { brokers } from '../helpers/kafka.ts'
import { EMBEDDED_LAG_MS, EMBEDDED_SESSION_MS } from '../../src/kafka/embedded/config.ts'
import { fenceAfterOf } from '../../src/dispatcher/index.ts'

const settings = (lag: string, session = '2000') =>
  new Map([
    [
      '1',
      new Map([
        ['replica.lag.time.max.ms', '3000'],
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
  const unsafe = unsafeBrokerSettings(settings('30000'), 5_000)
  assert.equal(unsafe.length, 1)
  assert.equal(unsafe[0]!.name, 'replica.lag.time.max.ms')
  assert.equal(unsafe[0]!.broker, '2')
  assert.match(unsafe[0]!.problem, /below 3333 ms/)
  // The leader checks its ISR every half of the setting: a dead follower may hold acks=all for 1.5 times it.
  assert.equal(unsafeBrokerSettings(settings('4000'), 5_000).length, 1, '6 s is not below 5 s')
  assert.equal(unsafeBrokerSettings(settings('3334'), 5_000).length, 1, 'equal is not below')
  assert.deepEqual(unsafeBrokerSettings(settings('3333'), 5_000), [])
  assert.deepEqual(
    unsafeBrokerSettings(
      new Map([
        ['1', new Map()],
        ['2', new Map()]
      ]),
      5_000
    ),
    [],
    'nothing to judge'
  )
  assert.deepEqual(
    unsafeBrokerSettings(new Map([['1', new Map([['replica.lag.time.max.ms', '30000']])]]), 5_000),
    [],
    'one broker has no followers'
  )
})

test("Kafka's default broker.session.timeout.ms (9 s) is unsafe: a dead leader keeps the heartbeats' partition that long", () => {
  const unsafe = unsafeBrokerSettings(settings('3000', '9000'), 5_000)
  assert.deepEqual(
    unsafe.map(u => [u.broker, u.name]),
    [['2', 'broker.session.timeout.ms']]
  )
  assert.match(unsafe[0]!.problem, /below 5000 ms/)
  assert.equal(unsafeBrokerSettings(settings('3000', '5000'), 5_000).length, 1, 'equal is not below')
})

test("the embedded cluster's own failover settings are safe for the lab's 6 s liveness timeout", () => {
  const embedded = new Map(
    ['1', '2', '3'].map(id => [
      id,
      new Map([
        ['replica.lag.time.max.ms', String(EMBEDDED_LAG_MS)],
        ['broker.session.timeout.ms', String(EMBEDDED_SESSION_MS)]
      ])
    ])
  )
  assert.deepEqual(unsafeBrokerSettings(embedded, fenceAfterOf(6_000)), [])
})

test('the settings are read from the real broker', async () => {
  const read = await readBrokerSettings({ brokers: brokers(), clientId: 'test-broker-settings' })
  assert.equal(read.size, 1)
  const [lag] = [...read.values()].map(c => c.get('replica.lag.time.max.ms'))
  assert.equal(lag, '30000', "Kafka's default: the embedded single broker leaves it")
  assert.deepEqual(unsafeBrokerSettings(read, 5_000), [], 'one broker: nothing to warn of')
})
