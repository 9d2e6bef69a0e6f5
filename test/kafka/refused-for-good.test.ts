// Which client errors end a log tailer's tries for a barrier's ends (see `refusedForGood` in log-tailer.ts): the
// library's own error objects, as it builds them from Kafka's error codes.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import {
  AuthenticationError,
  MultipleErrors,
  NetworkError,
  ProtocolError,
  TimeoutError,
  UnexpectedCorrelationIdError
} from '@platformatic/kafka'
import { refusedForGood } from '../../src/kafka/log-tailer.ts'

describe('refusedForGood', () => {
  it('stops on refusals no retry changes, never on a moved leader, a timeout or a lost connection', () => {
    assert.equal(refusedForGood(new ProtocolError('TOPIC_AUTHORIZATION_FAILED')), true)
    assert.equal(refusedForGood(new AuthenticationError('SASL failed')), true)
    assert.equal(refusedForGood(new ProtocolError('NOT_LEADER_OR_FOLLOWER')), false)
    assert.equal(refusedForGood(new ProtocolError('UNKNOWN_TOPIC_OR_PARTITION')), false)
    assert.equal(refusedForGood(new TimeoutError('Request timed out')), false)
    assert.equal(refusedForGood(new NetworkError('Connection closed')), false)
    assert.equal(refusedForGood(new Error('anything else')), false)
    assert.equal(refusedForGood(new ProtocolError('UNKNOWN_SERVER_ERROR')), false, 'a broker fault may pass')
    assert.equal(refusedForGood(new UnexpectedCorrelationIdError('garbled')), false)
    const forGood = new ProtocolError('TOPIC_AUTHORIZATION_FAILED')
    assert.equal(refusedForGood(new MultipleErrors('all refused', [forGood, forGood])), true)
    assert.equal(
      refusedForGood(new MultipleErrors('one moved', [forGood, new ProtocolError('NOT_LEADER_OR_FOLLOWER')])),
      false
    )
    assert.equal(refusedForGood(new MultipleErrors('none', [])), false)
  })
})
