// The heartbeater on a lossy link (the network lab's 20 % loss drill, test/lab/lossy-link.lab.ts, saw a dispatcher
// declared dead once): TCP retransmits, so answers come late rather than never. A stand-in Kafka client with
// a controllable answer time stands for the link; everything else is the real heartbeater on a mock clock.
import assert from 'node:assert/strict'
import { describe, it, mock } from 'node:test'
import type { HeartbeatClient, HeartbeaterOptions } from '../../src/dispatcher/heartbeater.ts'
import { Heartbeater } from '../../src/dispatcher/heartbeater.ts'

const record: HeartbeaterOptions['record'] = () => ({
  id: 'dispatcher-0',
  incarnation: 1,
  ordinal: 0,
  zone: 'a',
  node: 'n',
  capacity: { consumers: 1, schedules: 1 },
  used: { consumers: 0, schedules: 0 },
  contractOffset: '-1',
  startedAt: '2026-12-02T00:00:00.000Z'
})

/** Stand-in clients, each answering every send after `answerMs(client, send)` (undefined: never). */
class Link {
  readonly clients: Array<{ closed: boolean; sends: number }> = []
  readonly answerMs: (client: number, send: number) => number | undefined
  constructor(answerMs: (client: number, send: number) => number | undefined) {
    this.answerMs = answerMs
  }

  make = (): HeartbeatClient => {
    const index = this.clients.length
    const state = { closed: false, sends: 0 }
    this.clients.push(state)
    const client = {
      send: () =>
        new Promise((resolve, reject) => {
          const after = this.answerMs(index, state.sends++)
          if (after === undefined) return
          setTimeout(() => (state.closed ? reject(new Error('closed')) : resolve({ offsets: [] })), after)
        }),
      close: () => {
        state.closed = true
        return Promise.resolve()
      }
    }
    return client as unknown as HeartbeatClient
  }
}

/** Lets every promise reaction due now run (setImmediate is not mocked). */
function settled(): Promise<void> {
  return new Promise(resolve => setImmediate(resolve))
}

/** Stops it, letting the deadline of the heartbeat in flight pass. */
async function stopped(beats: Heartbeater): Promise<void> {
  const stopping = beats.stop()
  mock.timers.tick(1_000)
  await stopping
}

function heartbeater(link: Link): Heartbeater {
  return new Heartbeater({
    connection: { brokers: ['127.0.0.1:1', '127.0.0.1:2'], clientId: 'test' },
    topic: 'members',
    id: 'dispatcher-0',
    intervalMs: 1_000,
    fenceAfterMs: 3_000,
    record,
    clock: () => Date.now(),
    client: link.make
  })
}

describe('the heartbeater on a lossy link', () => {
  it('stays fresh when every answer comes after its beat deadline but within the fence time', async () => {
    mock.timers.enable({ apis: ['setTimeout', 'setInterval', 'Date'] })
    try {
      const link = new Link(() => 1_500)
      const beats = heartbeater(link)
      // As a dispatcher starts: one heartbeat, then one every interval; counted from the first answer on.
      const first = beats.beat()
      beats.start()
      mock.timers.tick(1_500)
      await settled()
      assert.equal(await first, false, 'the first answer came after its deadline')
      assert.equal(beats.lastAckedSentAt, 0, 'and still counts')
      let stale = 0
      beats.on('stale', () => stale++)
      for (let i = 0; i < 40; i++) {
        mock.timers.tick(250)
        await settled()
      }
      assert.equal(stale, 0, 'never stale while every heartbeat is committed, however late its answer')
      assert.equal(beats.stale, false)
      await stopped(beats)
    } finally {
      mock.timers.reset()
    }
  })

  it('keeps the old client beside a renewed one until one of them answers, and then only that one', async () => {
    mock.timers.enable({ apis: ['setTimeout', 'setInterval', 'Date'] })
    try {
      // The first client answers its third send only (late); the renewed one never answers.
      const link = new Link((client, send) => (client === 0 && send === 2 ? 200 : undefined))
      const beats = heartbeater(link)
      const misses: Array<Promise<boolean>> = []
      for (let i = 0; i < 2; i++) {
        misses.push(beats.beat())
        mock.timers.tick(1_000)
        assert.equal(await misses[i], false)
      }
      assert.equal(link.clients.length, 2, 'two misses in a row start a fresh client')
      assert.equal(link.clients[0]!.closed, false, 'the old client is not closed while none answered')
      const third = beats.beat()
      mock.timers.tick(200)
      assert.equal(await third, true, 'the old client answered through its connection')
      assert.equal(link.clients[1]!.closed, true, 'the client that did not answer is let go')
      assert.equal(link.clients[0]!.sends, 3, 'each beat went through every live client')
      assert.equal(link.clients[1]!.sends, 1)
      await stopped(beats)
    } finally {
      mock.timers.reset()
    }
  })

  it('has at most two clients however long nothing answers, renewing the oldest away', async () => {
    mock.timers.enable({ apis: ['setTimeout', 'setInterval', 'Date'] })
    try {
      const link = new Link(() => undefined)
      const beats = heartbeater(link)
      for (let i = 0; i < 8; i++) {
        const beat = beats.beat()
        mock.timers.tick(1_000)
        assert.equal(await beat, false)
      }
      const open = link.clients.filter(c => !c.closed).length
      assert.equal(link.clients.length, 5, 'a fresh client after every second miss')
      assert.equal(open, 2)
      assert.equal(beats.lastAckedSentAt, undefined)
      await stopped(beats)
    } finally {
      mock.timers.reset()
    }
  })
})
