// The heartbeater in two failures the network lab's zone cut (test/lab/zone-cut.lab.ts) found:
// - a first bootstrap broker that black-holes: every dispatcher listing the cut zone's broker first stayed fenced
//   after its heartbeat producer was renewed — each new producer asked that broker first, and with no retries,
//   only it;
// - a partition leader cut off from its followers and the KRaft quorum: it went on acknowledging heartbeats
//   (acks=1) the controllers could never read, so the dispatchers cut off with it never fenced.
import assert from 'node:assert/strict'
import { once } from 'node:events'
import { createServer } from 'node:net'
import type { AddressInfo, Socket } from 'node:net'
import { after, describe, it } from 'node:test'
import { Admin } from '@platformatic/kafka'
import { Heartbeater } from '../../src/dispatcher/heartbeater.ts'
import type { HeartbeaterOptions } from '../../src/dispatcher/heartbeater.ts'
import { ensureTopics } from '../../src/kafka/index.ts'
import { startEmbeddedKafka } from '../../src/kafka/embedded/index.ts'
import type { EmbeddedKafka } from '../../src/kafka/embedded/index.ts'
import { storeNames } from '../../src/store/index.ts'
import { brokers, uniqueName } from '../helpers/kafka.ts'
import { eventually } from '../helpers/wait.ts'

const record: HeartbeaterOptions['record'] = () => ({
  id: 'dispatcher-0',
  incarnation: 1,
  ordinal: 0,
  zone: 'a',
  node: 'n',
  capacity: { consumers: 1, schedules: 1 },
  used: { consumers: 0, schedules: 0 },
  contractOffset: '-1',
  startedAt: new Date().toISOString()
})

describe('the heartbeater', () => {
  // Each accepts connections and reads every request, answering none: brokers behind a network cut. Two, as the
  // heartbeater sends on two connections, whose first producers start at the first and the second broker.
  const sockets = new Set<Socket>()
  const silent = [0, 1].map(() =>
    createServer(socket => {
      sockets.add(socket)
      socket.on('data', () => {})
      socket.on('close', () => sockets.delete(socket))
    })
  )
  after(() => {
    for (const socket of sockets) socket.destroy()
    for (const server of silent) server.close()
  })

  it('gets its heartbeats through again when its first bootstrap brokers answer nothing', async () => {
    for (const server of silent) {
      server.listen(0, '127.0.0.1')
      await once(server, 'listening')
    }
    const topic = storeNames(uniqueName('heartbeat')).membersTopic
    await ensureTopics({ brokers: brokers(), clientId: 'test' }, [{ name: topic, partitions: 1, configs: {} }])
    const heartbeater = new Heartbeater({
      connection: {
        brokers: [...silent.map(server => `127.0.0.1:${(server.address() as AddressInfo).port}`), ...brokers()],
        clientId: 'test-heartbeater'
      },
      topic,
      id: 'dispatcher-0',
      intervalMs: 400,
      fenceAfterMs: 1_000,
      record
    })
    let missed = 0
    heartbeater.on('missed', () => missed++)
    // Misses before the first acknowledgement: each lane's first producer misses once and is renewed at once (a lane
    // that waited for two misses made four before any renewal).
    let missedBeforeAck: number | undefined
    heartbeater.once('fresh', () => (missedBeforeAck = missed))
    heartbeater.start()
    try {
      // The first producers ask the silent brokers and miss, once each; renewed ones start further on.
      await eventually(
        async () => (heartbeater.lastAckedSentAt !== undefined ? true : undefined),
        20_000,
        'a heartbeat acknowledged'
      )
      assert.ok(missed >= 2, `each lane's first producer missed (${missed} missed)`)
      assert.ok(
        missedBeforeAck !== undefined && missedBeforeAck < 4,
        `renewed after one miss (${missedBeforeAck} missed)`
      )
      assert.equal(heartbeater.stale, false)
    } finally {
      await heartbeater.close()
    }
  })
})

// Three brokers of its own (the run's shared one must not be frozen): the members partition's followers are
// SIGSTOPped, two of the three KRaft voters with them, so the leader can neither replicate nor shrink its ISR —
// what a broker cut off with its zone is to the dispatchers cut off with it.
describe('the heartbeater on a leader cut off from its followers', () => {
  let kafka: EmbeddedKafka | undefined
  const stopped: number[] = []
  after(async () => {
    for (const pid of stopped) process.kill(pid, 'SIGCONT')
    await kafka?.stop()
  })

  it('goes stale: a heartbeat only the leader holds is not one the controllers can read', async () => {
    kafka = await startEmbeddedKafka({ brokers: 3, port: 0 })
    const topic = storeNames(uniqueName('heartbeat-isr')).membersTopic
    const all = [...kafka.bootstrapBrokers]
    await ensureTopics({ brokers: all, clientId: 'test' }, [{ name: topic, partitions: 1, configs: {} }])
    const admin = new Admin({ clientId: 'test-admin', bootstrapBrokers: all })
    const leader = await eventually(
      async () => {
        const partition = (await admin.metadata({ topics: [topic], forceUpdate: true })).topics.get(topic)
          ?.partitions[0]
        return partition && partition.leader > 0 && partition.isr.length === 3 ? partition.leader : undefined
      },
      60_000,
      'a leader with all three replicas in sync'
    )
    await admin.close()
    const leaderBroker = kafka.brokers.find(b => b.nodeId === leader)!
    const heartbeater = new Heartbeater({
      connection: { brokers: [leaderBroker.address], clientId: 'test-heartbeater-isr' },
      topic,
      id: 'dispatcher-0',
      intervalMs: 400,
      fenceAfterMs: 1_000,
      record
    })
    heartbeater.start()
    try {
      await eventually(
        async () => (heartbeater.lastAckedSentAt !== undefined ? true : undefined),
        30_000,
        'a heartbeat'
      )
      const stale = once(heartbeater, 'stale')
      for (const b of kafka.brokers) {
        if (b.nodeId === leader || b.pid === undefined) continue
        process.kill(b.pid, 'SIGSTOP')
        stopped.push(b.pid)
      }
      let timer: NodeJS.Timeout | undefined
      const outcome = await Promise.race([
        stale.then(() => 'stale'),
        new Promise(resolve => (timer = setTimeout(() => resolve('still fresh after 10 s'), 10_000)))
      ])
      clearTimeout(timer)
      assert.equal(outcome, 'stale')
      for (const pid of stopped.splice(0)) process.kill(pid, 'SIGCONT')
      await eventually(async () => (heartbeater.stale ? undefined : true), 60_000, 'fresh again once they are back')
    } finally {
      await heartbeater.close()
    }
  })
})
