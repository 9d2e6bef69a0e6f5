// The broker settings a dispatcher warns of at start (src/kafka/broker-settings.ts): judged purely, and read from
// the run's real broker (one broker: Kafka's default stays, and there is no follower to wait for).
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { readBrokerSettings, unsafeBrokerSettings } from '../../src/kafka/index.ts'
import { brokers } from '../helpers/kafka.ts'

const settings = (lag: string) =>
  new Map([
    ['1', new Map([['replica.lag.time.max.ms', '4000']])],
    ['2', new Map([['replica.lag.time.max.ms', lag]])]
  ])

test("Kafka's default replica.lag.time.max.ms (30 s) is unsafe for a dispatcher fencing after 5 s", () => {
  const unsafe = unsafeBrokerSettings(settings('30000'), 5_000)
  assert.equal(unsafe.length, 1)
  assert.equal(unsafe[0]!.name, 'replica.lag.time.max.ms')
  assert.equal(unsafe[0]!.broker, '2')
  assert.match(unsafe[0]!.problem, /below 5000 ms/)
  assert.deepEqual(unsafeBrokerSettings(settings('5000'), 5_000).length, 1, 'equal is not below')
  assert.deepEqual(unsafeBrokerSettings(settings('4000'), 5_000), [])
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

test('the settings are read from the real broker', async () => {
  const read = await readBrokerSettings({ brokers: brokers(), clientId: 'test-broker-settings' })
  assert.equal(read.size, 1)
  const [lag] = [...read.values()].map(c => c.get('replica.lag.time.max.ms'))
  assert.equal(lag, '30000', "Kafka's default: the embedded single broker leaves it")
  assert.deepEqual(unsafeBrokerSettings(read, 5_000), [], 'one broker: nothing to warn of')
})
