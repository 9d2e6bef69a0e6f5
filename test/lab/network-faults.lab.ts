// The lab's own drill: the hosts reach each other and nothing outside the lab, and each
// network fault does what it says — a zone cut leaves the zone's hosts reaching each other and the sink host,
// a host cut leaves the host reaching nobody, a one-way cut drops one direction only, a lossy link drops about
// the share it was given, and heal() brings every path back. Probed with TCP connects and UDP datagrams
// between listeners on the hosts (not the brokers: a cut broker would disturb the Kafka the next drills use).
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { NetworkFaults } from './faults.ts'
import { hostOf } from './net.ts'
import type { LabHost } from './net.ts'
import { routesOutside, sendDatagrams, startProbe, tcpReaches } from './probe.ts'
import type { Probe } from './probe.ts'
import { appendRow, lab } from './drill.ts'

const LOSS = 20
const DATAGRAMS = 400

/** Waits until a probe has counted no new datagram for 300 ms (or 5 s): the burst has landed. */
async function landed(probe: Probe): Promise<number> {
  const deadline = Date.now() + 5_000
  let last = -1
  while (probe.datagrams !== last && Date.now() < deadline) {
    last = probe.datagrams
    await new Promise(resolve => setTimeout(resolve, 300))
  }
  return probe.datagrams
}

describe('the network lab', () => {
  const faults = new NetworkFaults(lab())
  const h = (name: string): LabHost => hostOf(lab(), name)
  const probes: Probe[] = []
  const probe = (name: string): Probe => probes.find(p => p.host.name === name)!
  const reach = async (from: string, to: string): Promise<boolean> => tcpReaches(h(from), h(to))
  let measuredLoss = 0

  before(async () => {
    for (const name of ['sink', 'dispatcher-0', 'dispatcher-1', 'controller-a', 'controller-b']) {
      probes.push(await startProbe(h(name)))
    }
  })
  after(async () => {
    await faults.heal()
    await Promise.all(probes.map(p => p.stop()))
    appendRow({ drill: 'network-faults', times: `lossy ${LOSS} % measured ${measuredLoss.toFixed(1)} %` })
  })

  it('joins every host and routes nothing out of the lab', async () => {
    for (const host of lab().hosts) {
      assert.equal(await routesOutside(host), false, `${host.name} has a route out of the lab`)
    }
    assert.ok(await reach('dispatcher-0', 'controller-b'))
    assert.ok(await reach('controller-b', 'dispatcher-0'))
    assert.ok(await reach('dispatcher-1', 'sink'))
    assert.ok(await reach('broker-c', 'controller-a'))
  })

  it('cuts a zone from the other zones: its hosts reach each other and the sink host', async () => {
    await faults.cutZone('a')
    assert.equal(await reach('dispatcher-0', 'controller-b'), false, 'zone a → zone b')
    assert.equal(await reach('controller-b', 'dispatcher-0'), false, 'zone b → zone a')
    assert.equal(await reach('broker-c', 'controller-a'), false, 'zone c → zone a')
    assert.ok(await reach('controller-a', 'dispatcher-0'), 'zone a → zone a')
    assert.ok(await reach('dispatcher-0', 'sink'), 'zone a → the sink host')
    assert.ok(await reach('sink', 'controller-a'), 'the sink host → zone a')
    assert.ok(await reach('dispatcher-1', 'controller-b'), 'zone b → zone b')
    await faults.heal()
    assert.ok(await reach('dispatcher-0', 'controller-b'), 'healed')
  })

  it('cuts a host from every other', async () => {
    await faults.cutHost('dispatcher-1')
    assert.equal(await reach('sink', 'dispatcher-1'), false)
    assert.equal(await reach('controller-b', 'dispatcher-1'), false, 'same zone')
    assert.equal(await reach('dispatcher-1', 'sink'), false)
    assert.ok(await reach('sink', 'controller-b'))
    await faults.heal()
    assert.ok(await reach('sink', 'dispatcher-1'), 'healed')
  })

  it('cuts one way only', async () => {
    await faults.cutOneWay('dispatcher-0', 'controller-b')
    const there = probe('controller-b').datagrams
    const back = probe('dispatcher-0').datagrams
    await sendDatagrams(h('dispatcher-0'), h('controller-b'), 50)
    await sendDatagrams(h('controller-b'), h('dispatcher-0'), 50)
    assert.equal((await landed(probe('controller-b'))) - there, 0, 'dispatcher-0 → controller-b dropped')
    assert.equal((await landed(probe('dispatcher-0'))) - back, 50, 'controller-b → dispatcher-0 delivered')
    await faults.heal()
  })

  it(`drops about ${LOSS} % of the packets of a lossy link, each way, and nothing once healed`, async () => {
    await faults.lossy(['dispatcher-1'], ['controller-b'], LOSS)
    const there = probe('controller-b').datagrams
    const back = probe('dispatcher-1').datagrams
    await sendDatagrams(h('dispatcher-1'), h('controller-b'), DATAGRAMS)
    await sendDatagrams(h('controller-b'), h('dispatcher-1'), DATAGRAMS)
    const gotThere = (await landed(probe('controller-b'))) - there
    const gotBack = (await landed(probe('dispatcher-1'))) - back
    measuredLoss = 100 * (1 - (gotThere + gotBack) / (2 * DATAGRAMS))
    console.log(`# lossy ${LOSS} %: ${gotThere}/${DATAGRAMS} there, ${gotBack}/${DATAGRAMS} back`)
    // Binomial: 400 datagrams at 20 % loss keep 320 ± 8 (one standard deviation); these bounds are ±5.
    for (const got of [gotThere, gotBack]) assert.ok(got > 280 && got < 360, `${got} of ${DATAGRAMS} arrived`)
    await faults.heal()
    const healed = probe('controller-b').datagrams
    await sendDatagrams(h('dispatcher-1'), h('controller-b'), 100)
    assert.equal((await landed(probe('controller-b'))) - healed, 100, 'healed: every datagram arrives')
  })
})
