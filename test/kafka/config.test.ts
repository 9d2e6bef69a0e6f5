// The broker settings the embedded Kafka writes (pure; no broker needed). docs/kafka.md explains each.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { brokerSettings, parseJavaMajor } from '../../src/kafka/embedded/index.ts'
import type { BrokerSpec } from '../../src/kafka/embedded/index.ts'

const spec = (nodeId: number): BrokerSpec => ({
  nodeId,
  port: 9091 + nodeId,
  controllerPort: 19091 + nodeId,
  logDir: `/data/broker-${nodeId}`
})

test('one broker: everything replicated once, so the internal topics can be created', () => {
  const settings = brokerSettings(spec(1), [spec(1)])
  assert.equal(settings.get('process.roles'), 'broker,controller')
  assert.equal(settings.get('controller.quorum.voters'), '1@127.0.0.1:19092')
  assert.equal(settings.get('listeners'), 'PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:19092')
  assert.equal(settings.get('advertised.listeners'), 'PLAINTEXT://127.0.0.1:9092')
  for (const key of [
    'offsets.topic.replication.factor',
    'transaction.state.log.replication.factor',
    'transaction.state.log.min.isr',
    'min.insync.replicas',
    'default.replication.factor'
  ]) {
    assert.equal(settings.get(key), '1', key)
  }
  assert.equal(settings.get('auto.create.topics.enable'), 'false')
  assert.equal(settings.get('group.initial.rebalance.delay.ms'), '0')
  assert.ok(Number(settings.get('group.min.session.timeout.ms')) <= 3000)
  assert.equal(settings.has('message.max.bytes'), false, 'the default 1 MiB stays')
})

test('three brokers: every node a voter, replication 3, min ISR 2, failover in seconds', () => {
  const cluster = [spec(1), spec(2), spec(3)]
  const settings = brokerSettings(cluster[1]!, cluster)
  assert.equal(settings.get('node.id'), '2')
  assert.equal(settings.get('controller.quorum.voters'), '1@127.0.0.1:19092,2@127.0.0.1:19093,3@127.0.0.1:19094')
  assert.equal(settings.get('default.replication.factor'), '3')
  assert.equal(settings.get('offsets.topic.replication.factor'), '3')
  assert.equal(settings.get('transaction.state.log.replication.factor'), '3')
  assert.equal(settings.get('transaction.state.log.min.isr'), '2')
  assert.equal(settings.get('min.insync.replicas'), '2')
  assert.ok(Number(settings.get('broker.session.timeout.ms')) <= 5000)
  assert.ok(Number(settings.get('replica.lag.time.max.ms')) <= 10000)
  assert.ok(Number(settings.get('broker.heartbeat.interval.ms')) <= 1000)
})

test('java -version output gives the major version', () => {
  assert.equal(parseJavaMajor('openjdk version "17.0.15" 2025-04-15'), 17)
  assert.equal(parseJavaMajor('java version "1.8.0_392"'), 8)
  assert.equal(parseJavaMajor('openjdk version "21" 2023-09-19'), 21)
  assert.equal(parseJavaMajor('no version here'), undefined)
})

test('an extra listener: its own port, advertised at another address, plaintext', () => {
  const broker: BrokerSpec = {
    ...spec(1),
    extraListener: { name: 'PROXIED', port: 29092, advertised: '127.0.0.1:39092' }
  }
  const settings = brokerSettings(broker, [broker])
  assert.equal(
    settings.get('listeners'),
    'PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:19092,PROXIED://127.0.0.1:29092'
  )
  assert.equal(settings.get('advertised.listeners'), 'PLAINTEXT://127.0.0.1:9092,PROXIED://127.0.0.1:39092')
  assert.equal(
    settings.get('listener.security.protocol.map'),
    'CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,PROXIED:PLAINTEXT'
  )
  assert.equal(settings.get('inter.broker.listener.name'), 'PLAINTEXT')
})
