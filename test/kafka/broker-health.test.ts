// Which brokers look gone (src/kafka/broker-health.ts), pure: requests sent and answered at given times.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import {
  BrokerHealth,
  FORGET_AFTER_MS,
  PRODUCE_SUSPECT_AFTER_MS,
  SUSPECT_AFTER_MS
} from '../../src/kafka/broker-health.ts'

const METADATA = 3
const JOIN_GROUP = 11
const PRODUCE = 0

test('a broker that leaves a request unanswered is suspect once it is old, until it answers again', () => {
  const health = new BrokerHealth()
  const request = {}
  health.sent('a:1', request, METADATA, 0)
  assert.equal(health.suspect('a:1', SUSPECT_AFTER_MS - 1), false, 'not yet')
  assert.equal(health.suspect('a:1', SUSPECT_AFTER_MS), true)
  assert.equal(health.suspect('b:1', SUSPECT_AFTER_MS), false, 'a broker never asked is not suspect')
  health.answered('a:1', {}, SUSPECT_AFTER_MS + 1)
  assert.equal(health.suspect('a:1', SUSPECT_AFTER_MS + 2), false, 'an answer after the request clears it')
})

test('a broker that answered before the old request was sent stays suspect', () => {
  const health = new BrokerHealth()
  health.sent('a:1', {}, METADATA, 0)
  health.answered('a:1', {}, 0)
  const stuck = {}
  health.sent('a:1', stuck, METADATA, 10)
  assert.equal(health.suspect('a:1', 10 + SUSPECT_AFTER_MS), true)
  health.answered('a:1', stuck, 10 + SUSPECT_AFTER_MS)
  assert.equal(health.suspect('a:1', 20 + SUSPECT_AFTER_MS), false)
})

test('a JoinGroup held by the coordinator does not make it suspect; an acks=all Produce only when held past the ISR wait', () => {
  const health = new BrokerHealth()
  health.sent('a:1', {}, JOIN_GROUP, 0)
  assert.equal(health.suspect('a:1', 9_000), false)
  health.sent('b:1', {}, PRODUCE, 0)
  assert.equal(health.suspect('b:1', SUSPECT_AFTER_MS), false, 'a produce may wait for a follower to leave the ISR')
  assert.equal(health.suspect('b:1', PRODUCE_SUSPECT_AFTER_MS), true)
  // OffsetCommit (8) and EndTxn (26) are answered once the coordinator's own write is replicated: as patient.
  for (const [broker, apiKey] of [
    ['c:1', 8],
    ['d:1', 26]
  ] as const) {
    health.sent(broker, {}, apiKey, 0)
    assert.equal(health.suspect(broker, SUSPECT_AFTER_MS), false, `API key ${apiKey} may wait for the ISR`)
    assert.equal(health.suspect(broker, PRODUCE_SUSPECT_AFTER_MS), true)
  }
})

test('newlySuspect names a broker once when it turns suspect, and again only after it answered', () => {
  const health = new BrokerHealth()
  const stuck = {}
  health.sent('a:1', stuck, METADATA, 0)
  health.sent('b:1', {}, METADATA, 0)
  health.answered('b:1', {}, 10)
  assert.deepEqual(health.newlySuspect(SUSPECT_AFTER_MS - 1), [])
  assert.deepEqual(health.newlySuspect(SUSPECT_AFTER_MS), ['a:1'])
  assert.deepEqual(health.newlySuspect(SUSPECT_AFTER_MS + 500), [], 'still suspect: not named again')
  health.answered('a:1', stuck, SUSPECT_AFTER_MS + 600)
  assert.deepEqual(health.newlySuspect(SUSPECT_AFTER_MS + 700), [])
  health.sent('a:1', {}, METADATA, 10_000)
  assert.deepEqual(health.newlySuspect(10_000 + SUSPECT_AFTER_MS), ['a:1'], 'a new spell')
})

test('an unanswered request is forgotten after a minute: the broker gets another chance', () => {
  const health = new BrokerHealth()
  health.sent('a:1', {}, METADATA, 0)
  assert.equal(health.suspect('a:1', FORGET_AFTER_MS - 1), true)
  assert.equal(health.suspect('a:1', FORGET_AFTER_MS), false)
})

test('order puts suspect brokers last, each part in its given order', () => {
  const health = new BrokerHealth()
  health.sent('a:1', {}, METADATA, 0)
  health.sent('c:1', {}, METADATA, 0)
  const now = SUSPECT_AFTER_MS
  assert.deepEqual(
    health.order(['a:1', 'b:1', 'c:1', 'd:1'], b => b, now),
    ['b:1', 'd:1', 'a:1', 'c:1']
  )
})
