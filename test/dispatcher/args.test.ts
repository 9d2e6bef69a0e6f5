import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import {
  dispatcherDefaultsFromEnv,
  fenceAfterOf,
  heartbeatDeadlineOf,
  heartbeatIntervalOf,
  nextIncarnation,
  parseDispatcherArgs
} from '../../src/dispatcher/index.ts'

const required = [
  '--kafka',
  '127.0.0.1:9092',
  '--id',
  'dispatcher-3',
  '--zone',
  'a',
  '--node',
  'n1',
  '--capacity',
  '10'
]

describe('shoal dispatcher arguments', () => {
  it('takes the flags', () => {
    assert.deepEqual(
      parseDispatcherArgs(
        [
          ...required,
          '--schedule-capacity',
          '50',
          '--prefix',
          'p',
          '--liveness-timeout',
          '3s',
          '--max-connections-per-origin',
          '4096',
          '--release-memory-after',
          '0'
        ],
        {}
      ),
      {
        brokers: ['127.0.0.1:9092'],
        id: 'dispatcher-3',
        zone: 'a',
        node: 'n1',
        capacity: 10,
        scheduleCapacity: 50,
        prefix: 'p',
        livenessTimeoutMs: 3000,
        maxConnectionsPerOrigin: 4096,
        releaseMemoryAfter: 0
      }
    )
  })

  it('takes id, zone and node from a Kubernetes pod environment', () => {
    const env = {
      POD_NAME: 'shoal-dispatcher-4',
      SHOAL_ZONE: 'eu-west-1b',
      NODE_NAME: 'ip-10-0-0-1',
      KAFKA_BOOTSTRAP_SERVERS: 'k:9092'
    }
    assert.deepEqual(parseDispatcherArgs(['--capacity', '10'], env), {
      brokers: ['k:9092'],
      id: 'dispatcher-4',
      zone: 'eu-west-1b',
      node: 'ip-10-0-0-1',
      capacity: 10
    })
    assert.deepEqual(dispatcherDefaultsFromEnv({ HOSTNAME: 'shoal-dispatcher-07' }), { id: 'dispatcher-7' })
    assert.deepEqual(dispatcherDefaultsFromEnv({ HOSTNAME: 'laptop' }), {})
    // Flags win over the environment.
    const flagged = parseDispatcherArgs(required, env)
    assert.ok(flagged !== 'help' && flagged.id === 'dispatcher-3' && flagged.zone === 'a')
  })

  it('names the wrong argument', () => {
    const cases: Array<[string[], RegExp]> = [
      [required.filter((_, i) => i > 1), /--kafka is required/],
      [[...required.slice(0, 8)], /--capacity is required/],
      [required.slice(2, 4).concat(['--kafka', 'nope']), /--kafka: not a host:port/],
      [[...required, '--capacity=-1'], /--capacity must be an integer >= 0/],
      [[...required, '--capacity', 'many'], /--capacity must be an integer >= 0, not "many"/],
      [[...required, '--liveness-timeout', '10'], /--liveness-timeout must be a duration/],
      [[...required, '--liveness-timeout', '100ms'], /--liveness-timeout: the liveness timeout must be from 1 s/],
      [[...required, '--id', 'Dispatcher/3'], /--id "Dispatcher\/3"/],
      [[...required, '--prefix', 'a b'], /--prefix:/],
      [[...required, '--max-connections-per-origin', '0'], /--max-connections-per-origin must be an integer >= 1/],
      [[...required, '--release-memory-after', 'lots'], /--release-memory-after must be an integer >= 0, not "lots"/],
      [[...required, '--bogus'], /Unknown option '--bogus'/]
    ]
    for (const [argv, message] of cases) {
      assert.throws(() => parseDispatcherArgs(argv, {}), message, argv.join(' '))
    }
    assert.throws(() => parseDispatcherArgs(required.slice(0, 4), {}), /--zone is required \(or set SHOAL_ZONE\)/)
  })
})

describe('timings and incarnations', () => {
  it('derives heartbeat and self-fencing from the liveness timeout', () => {
    assert.equal(heartbeatIntervalOf(10_000), 1_000)
    assert.equal(heartbeatDeadlineOf(10_000), 2_000)
    assert.equal(fenceAfterOf(10_000), 5_000)
  })

  it('gives each start a higher incarnation than any before', () => {
    assert.equal(nextIncarnation(undefined, 1_000), 1_000)
    assert.equal(nextIncarnation(999, 1_000), 1_000)
    // A clock that went backwards still gets a higher incarnation from the log.
    assert.equal(nextIncarnation(5_000, 1_000), 5_001)
  })
})
