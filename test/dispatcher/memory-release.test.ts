import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { MemoryReleaser, reduceMemory } from '../../src/dispatcher/memory-release.ts'
import type { MemoryRelease } from '../../src/dispatcher/memory-release.ts'
import { eventually } from '../helpers/wait.ts'

const sleep = (ms: number) => new Promise(resolve => setTimeout(resolve, ms))

function releaser(threshold: number, canPause: () => boolean = () => true) {
  const releases: MemoryRelease[] = []
  let collected = 0
  const memory = new MemoryReleaser({
    threshold,
    quietMs: 50,
    canPause,
    collect: () => collected++,
    onRelease: release => releases.push(release)
  })
  return { memory, releases, collected: () => collected }
}

describe('MemoryReleaser', () => {
  it('releases once after the threshold and a quiet spell, counting every record of the load', async () => {
    const { memory, releases, collected } = releaser(1_000)
    memory.load(600)
    await sleep(150)
    assert.equal(collected(), 0, 'below the threshold: nothing')
    memory.load(500)
    await eventually(async () => (releases.length === 1 ? true : undefined), 30_000, 'a release')
    assert.equal(collected(), 1)
    assert.equal(releases[0]!.records, 1_100)
    assert.ok(releases[0]!.rssBefore > 0 && releases[0]!.rssAfter > 0)
    assert.equal(memory.loaded, 0)
    await sleep(150)
    assert.equal(collected(), 1, 'once per load')
    memory.close()
  })

  it('waits until a pause is harmless, and never releases with a threshold of 0 or once closed', async () => {
    let harmless = false
    const waiting = releaser(10, () => harmless)
    waiting.memory.load(10)
    await sleep(200)
    assert.equal(waiting.collected(), 0, 'not while a pause would hurt')
    harmless = true
    await eventually(async () => (waiting.collected() === 1 ? true : undefined), 30_000, 'the release once harmless')
    waiting.memory.close()

    const never = releaser(0)
    never.memory.load(1_000_000)
    const closed = releaser(10)
    closed.memory.load(10)
    closed.memory.close()
    await sleep(200)
    assert.equal(never.collected(), 0)
    assert.equal(closed.collected(), 0)
    assert.throws(() => new MemoryReleaser({ threshold: -1 }), /threshold -1/)
  })

  it("runs V8's memory-reducing collection without --expose-gc on the command line", () => {
    assert.equal(typeof (globalThis as { gc?: unknown }).gc, 'undefined', 'this test runs without --expose-gc')
    reduceMemory()
    reduceMemory()
    assert.equal(typeof (globalThis as { gc?: unknown }).gc, 'undefined', 'gc stays out of the main context')
  })
})
