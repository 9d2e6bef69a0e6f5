// Drill: a lossy link between every dispatcher and every broker — 20 % of the packets dropped each way, at
// random (nftables numgen) — while records stream and PingSources fire. TCP retransmits what is dropped, so
// delivery is slower; nothing may be lost, and the pool must not churn: the consumer groups' rebalances are
// counted (Kafka's DescribeGroups, polled) in a window without loss and in one of the same length with it, and
// the dispatchers' state changes as the controllers see them.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { http } from '../helpers/http.ts'
import { eventually } from '../helpers/wait.ts'
import { createEverySecondSources, readyTimes } from '../helpers/ticks.ts'
import {
  IdProducer,
  KS,
  PINGS,
  assertPings,
  createSource,
  reportEach,
  reportPings,
  settle,
  sleep,
  waitReady
} from '../faults/harness.ts'
import { NetworkFaults } from './faults.ts'
import { GroupWatcher, Stream, dispatcherStates, lab, startDrill, startPool, timesNote } from './drill.ts'
import type { Pool } from './drill.ts'
import { hostsOf } from './net.ts'

const PARTITIONS = 6
const SOURCES = ['unordered', 'ordered'] as const
/** Percent of packets dropped each way; SHOAL_LAB_LOSS names another (the figures in docs/faults.md: 10, 20, 30). */
const LOSS = lossOf(process.env.SHOAL_LAB_LOSS)
const WINDOW_MS = 30_000

describe(`drill: a lossy link (${LOSS} %) between the dispatchers and the brokers`, () => {
  it('delivers everything, slower, without a rebalance storm', async () => {
    const { started, prefix, topic, sink, pingSink } = await startDrill('lab-lossy', PARTITIONS)
    const producer = new IdProducer('lossy-link', topic, PARTITIONS)
    const faults = new NetworkFaults(lab())
    let pool: Pool | undefined
    let stream: Stream | undefined
    let watcher: GroupWatcher | undefined
    try {
      pool = await startPool(prefix)
      const api = pool.controllers[0]!.url
      for (const ordering of SOURCES) {
        await createSource(api, { name: ordering, topic, sink: sink.url(ordering), consumers: 2, ordering })
      }
      await createEverySecondSources(api, PINGS, pingSink)
      await waitReady(api, SOURCES)
      const pingsReady = await readyTimes(api, PINGS)
      const groups = await Promise.all(
        SOURCES.map(async s => (await http('GET', `${api}${KS}/${s}`)).body.spec.consumerGroup as string)
      )
      stream = new Stream(producer)
      await eventually(async () => (SOURCES.every(s => sink.ids(s).size >= 300) ? true : undefined), 120_000, 'flowing')

      // Dispatcher state changes (any state other than the last seen) as the controller reports them.
      let stateChanges = 0
      let watching = true
      const states = (async () => {
        let last = await dispatcherStates(api)
        while (watching) {
          await sleep(250)
          const now = await dispatcherStates(api).catch(() => last)
          for (const [id, state] of now) if (last.get(id) !== state) stateChanges++
          last = now
        }
      })()

      // The window without loss: what the pool does anyway.
      watcher = new GroupWatcher(groups)
      const calmFrom = stream.produced
      await sleep(WINDOW_MS)
      const calm = { rebalances: watcher.total, delivered: deliveredSince(calmFrom), changes: stateChanges }
      await watcher.close()

      const dispatchers = hostsOf(lab(), 'dispatcher').map(h => h.name)
      const brokerHosts = hostsOf(lab(), 'broker').map(h => h.name)
      watcher = new GroupWatcher(groups)
      const lossyFrom = stream.produced
      const changesBefore = stateChanges
      const lossAt = await faults.lossy(dispatchers, brokerHosts, LOSS)
      await sleep(WINDOW_MS)
      const lossy = {
        rebalances: watcher.total,
        delivered: deliveredSince(lossyFrom),
        changes: stateChanges - changesBefore
      }
      const dropped = [...(await faults.dropped()).values()].reduce((n, x) => n + x, 0)
      const healAt = await faults.heal()
      await watcher.close()
      watcher = undefined
      await stream.stop()
      watching = false
      await states

      const sources = SOURCES.map(name => ({ name, sink }))
      await settle('lossy-link', producer.produced, sources)
      const pingsStop = Date.now()
      const times = timesNote({ lossy: healAt - lossAt, took: Date.now() - started })
      const notes = {
        loss: `${LOSS} %`,
        droppedPackets: dropped,
        rebalances: `${calm.rebalances} in ${WINDOW_MS / 1000} s without loss, ${lossy.rebalances} with it`,
        stateChanges: `${calm.changes} without, ${lossy.changes} with`,
        deliveredPerSecond: `${rate(calm.delivered)} without, ${rate(lossy.delivered)} with`,
        times
      }
      const kafka = reportEach('lossy-link', producer.produced, sources, notes)
      const pings = await reportPings(
        'lossy-link',
        pingSink,
        pingsReady,
        pingsStop,
        { times },
        {
          lossy: lossAt,
          heal: healAt
        }
      )
      for (const figures of kafka) {
        assert.equal(figures.produced, producer.produced.size)
        assert.equal(figures.lost, 0, `${figures.drill}: lost ${figures.lostIds.slice(0, 20).join(' ')}`)
      }
      assertPings('lossy-link', pings)
      assert.ok(dropped > 0, 'the lossy link dropped packets')
      // A storm is rebalance after rebalance; a lossy link may cost one, when a member's heartbeat is late.
      assert.ok(
        lossy.rebalances <= 2,
        `${lossy.rebalances} rebalances of ${groups.length} groups in ${WINDOW_MS / 1000} s`
      )
      assert.equal(lossy.changes, 0, 'a dispatcher changed state on the lossy link')
    } finally {
      await stream?.stop()
      await watcher?.close()
      await faults.heal()
      await producer.close()
      await pool?.stop()
      await sink.close()
      await pingSink.close()
    }

    /** Ids (either source) delivered with a number at least `from`. */
    function deliveredSince(from: number): number {
      let n = 0
      for (const s of SOURCES) for (const id of sink.ids(s)) if (Number(id.slice(id.lastIndexOf('-') + 1)) >= from) n++
      return n
    }
    function rate(delivered: number): string {
      return `${Math.round(delivered / (WINDOW_MS / 1000))}/s`
    }
  })
})

function lossOf(text: string | undefined): number {
  if (text === undefined) return 20
  const loss = Number(text)
  if (!Number.isInteger(loss) || loss < 1 || loss > 50)
    throw new Error(`SHOAL_LAB_LOSS: a percentage from 1 to 50, not ${text}`)
  return loss
}
