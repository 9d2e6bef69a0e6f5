// The commit path's own connections (src/kafka-source/offset-committer.ts): a group coordinator that answers nothing
// is not asked at all, and one that answers is, against the real broker.
import assert from 'node:assert/strict'
import { createServer } from 'node:net'
import type { Socket } from 'node:net'
import { describe, it } from 'node:test'
import { Admin, FindCoordinatorKeyTypes } from '@platformatic/kafka'
import { isShoalError } from '../../src/errors/index.ts'
import { brokerHealth } from '../../src/kafka/index.ts'
import { OffsetCommitter } from '../../src/kafka-source/offset-committer.ts'
import { brokers, createTopic, uniqueName } from '../helpers/kafka.ts'

describe('OffsetCommitter', () => {
  it('fails at once, retriable, for a coordinator that answers nothing, and never connects to it', async () => {
    // A "broker" that accepts connections and answers nothing, as one lost with its zone looks to a new connection.
    const sockets: Socket[] = []
    const server = createServer(socket => sockets.push(socket))
    await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
    const port = (server.address() as { port: number }).port
    const coordinator = { host: '127.0.0.1', port }
    // Suspect as the process's connections would have found it: a request unanswered for longer than its patience.
    brokerHealth.sent(`127.0.0.1:${port}`, {}, 8, Date.now() - 60_000 + 10_000)
    assert.equal(brokerHealth.suspect(`127.0.0.1:${port}`, Date.now()), true)
    const committer = new OffsetCommitter(uniqueName('committer'))
    try {
      const identity = { groupId: 'g', generationId: 1, memberId: 'm', groupInstanceId: null, coordinator }
      const commit = committer.commit(identity, [{ topic: 't', partition: 0, offset: 1n }])
      await assert.rejects(commit, error => isShoalError(error) && error.retriable === true)
      await assert.rejects(committer.committed(coordinator, 'g', [{ topic: 't', partition: 0 }]), /answers nothing/)
      assert.equal(sockets.length, 0, 'a connection was opened to the coordinator that answers nothing')
    } finally {
      await committer.close()
      for (const socket of sockets) socket.destroy()
      server.close()
    }
  })

  it('commits to, and reads from, a coordinator that answers', async () => {
    const topic = uniqueName('committer')
    const groupId = uniqueName('committer-group')
    await createTopic(topic, { partitions: 2 })
    const admin = new Admin({ clientId: 'committer-test', bootstrapBrokers: brokers() })
    const committer = new OffsetCommitter(uniqueName('committer'))
    try {
      const [found] = await admin.findCoordinator({ keyType: FindCoordinatorKeyTypes.GROUP, keys: [groupId] })
      assert.ok(found)
      const coordinator = { host: found.host, port: found.port }
      // A commit outside any generation, as Kafka takes one for a group with no members.
      const identity = { groupId, generationId: -1, memberId: '', groupInstanceId: null, coordinator }
      await committer.commit(identity, [{ topic, partition: 1, offset: 42n, metadata: 'note' }])
      const committed = await committer.committed(coordinator, groupId, [
        { topic, partition: 0 },
        { topic, partition: 1 }
      ])
      assert.deepEqual(committed.get(`${topic}/1`), { offset: 42n, metadata: 'note' })
      assert.equal(committed.get(`${topic}/0`)?.offset, -1n)
    } finally {
      await committer.close()
      await admin.close()
    }
  })
})
