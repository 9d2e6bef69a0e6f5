// The network lab's pure parts (test/lab/net.ts): layout, addresses, namespace names and the nftables rules of
// each fault. No root needed: the lab itself runs in `npm run test:lab`.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { describeLab, faultRules, labIdOf, namespaceOf, newLabId, subnetOf, zonesOf } from './net.ts'
import { lastStallEnd } from './drill.ts'

const lab = describeLab('abc123', '/tmp/shoal-lab-abc123')
const address = (name: string): string => lab.hosts.find(h => h.name === name)!.address

describe('the network lab layout', () => {
  it('gives every host one address in the lab id’s /24, by role', () => {
    assert.match(lab.subnet, /^10\.237\.\d{1,3}\.0\/24$/)
    assert.equal(subnetOf('abc123'), lab.subnet)
    const base = lab.subnet.replace('.0/24', '')
    assert.equal(address('sink'), `${base}.10`)
    assert.deepEqual(
      ['broker-a', 'broker-b', 'broker-c'].map(address),
      [11, 12, 13].map(n => `${base}.${n}`)
    )
    assert.deepEqual(
      ['controller-a', 'controller-b', 'controller-c'].map(address),
      [21, 22, 23].map(n => `${base}.${n}`)
    )
    assert.deepEqual(
      ['dispatcher-0', 'dispatcher-1', 'dispatcher-2', 'dispatcher-3'].map(address),
      [31, 32, 33, 34].map(n => `${base}.${n}`)
    )
    assert.equal(new Set(lab.hosts.map(h => h.address)).size, lab.hosts.length)
    assert.deepEqual(zonesOf(lab), ['a', 'b', 'c'])
  })

  it('names every namespace with the lab id, and tells a lab’s namespaces from others', () => {
    assert.equal(namespaceOf('abc123', 'sink'), 'shoal-lab-abc123-sink')
    assert.equal(lab.switchNamespace, 'shoal-lab-abc123-switch')
    for (const h of lab.hosts) assert.equal(labIdOf(h.namespace), 'abc123')
    assert.equal(labIdOf('some-other-netns'), undefined)
    assert.match(newLabId(), /^[a-z0-9]{6}$/)
    assert.throws(() => describeLab('Bad_Id', '/tmp/x'))
    assert.throws(() =>
      describeLab('x', '/tmp/x', [
        { name: 'h', role: 'sink' },
        { name: 'h', role: 'sink' }
      ])
    )
  })
})

describe('the network lab faults as nftables rules', () => {
  it('cuts a host: everything in and out of its eth0 dropped, on that host only', () => {
    const rules = faultRules(lab, { kind: 'cut-host', host: 'dispatcher-1' })
    assert.deepEqual([...rules.keys()], ['dispatcher-1'])
    assert.match(rules.get('dispatcher-1')!, /input iifname "eth0" counter drop/)
    assert.match(rules.get('dispatcher-1')!, /output oifname "eth0" counter drop/)
  })

  it('cuts a zone from the other zones only: not from itself, not from the sink host', () => {
    const rules = faultRules(lab, { kind: 'cut-zone', zone: 'a' })
    assert.deepEqual([...rules.keys()].sort(), ['broker-a', 'controller-a', 'dispatcher-0', 'dispatcher-3'])
    const script = rules.get('dispatcher-0')!
    for (const other of ['broker-b', 'broker-c', 'controller-b', 'controller-c', 'dispatcher-1', 'dispatcher-2']) {
      assert.ok(script.includes(address(other)), `${other} cut`)
    }
    for (const kept of ['sink', 'broker-a', 'controller-a', 'dispatcher-3']) {
      assert.ok(!script.includes(`${address(kept)},`) && !script.includes(`${address(kept)} }`), `${kept} kept`)
    }
    assert.match(script, /input ip saddr \{ .* \} counter drop/)
    assert.match(script, /output ip daddr \{ .* \} counter drop/)
  })

  it('cuts one way at the receiver, and makes a lossy link with numgen each way', () => {
    const oneWay = faultRules(lab, { kind: 'cut-one-way', from: 'dispatcher-0', to: 'broker-b' })
    assert.deepEqual([...oneWay.keys()], ['broker-b'])
    assert.match(
      oneWay.get('broker-b')!,
      new RegExp(`input ip saddr ${address('dispatcher-0').replaceAll('.', '\\.')} `)
    )
    const lossy = faultRules(lab, {
      kind: 'lossy',
      hosts: ['dispatcher-0'],
      peers: ['broker-a', 'broker-b'],
      percent: 20
    })
    const script = lossy.get('dispatcher-0')!
    assert.match(script, /input ip saddr \{ [\d.]+, [\d.]+ \} numgen random mod 100 < 20 counter drop/)
    assert.match(script, /output ip daddr \{ [\d.]+, [\d.]+ \} numgen random mod 100 < 20 counter drop/)
    assert.throws(() => faultRules(lab, { kind: 'lossy', hosts: ['dispatcher-0'], peers: ['broker-a'], percent: 0 }))
    assert.throws(() => faultRules(lab, { kind: 'cut-host', host: 'nope' }))
  })
})

describe('the drills’ stall figure', () => {
  const sink = (answers: Record<number, number[]>) => ({
    partitionAnswers: new Map(
      Object.entries(answers).map(([p, times]) => [`s|${p}`, times.map(t => [t, 'x'] as const)])
    )
  })
  it('is the end of the last gap of more than 2 s in any partition, a partition silent at the end counting then', () => {
    // Partition 0 steady after 3 s; partition 1 stalls again from 6 s to 9 s.
    const steady = {
      name: 's',
      sink: sink({ 0: [3_000, 4_000, 5_000, 6_000, 7_000, 8_000, 9_000], 1: [2_500, 4_000, 6_000, 9_000, 9_500] })
    }
    assert.deepEqual(lastStallEnd([steady], 2, 0, 10_000), [9_000])
    // A partition that never delivers again: resumed "at the end".
    assert.deepEqual(lastStallEnd([{ name: 's', sink: sink({ 0: [1_000, 2_000] }) }], 1, 0, 10_000), [10_000])
    // Gaps of 2 s or less are not stalls; answers outside the window do not count.
    assert.deepEqual(
      lastStallEnd([{ name: 's', sink: sink({ 0: [1_500, 3_500, 5_500, 7_500, 9_500, 12_000] }) }], 1, 0, 10_000),
      [0]
    )
  })
})
