import assert from 'node:assert/strict'
import { afterEach, beforeEach, describe, it, mock } from 'node:test'
import { MemoryReleaser, reduceMemory } from '../../src/ping-source/memory-release.ts'
import type { MemoryRelease } from '../../src/ping-source/memory-release.ts'

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

// The releaser's quiet spell and retries are timers: the mocked clock moves them, so "nothing happened" is
// checked after a stated span of time rather than after a sleep that a slow machine could cut short.
describe('MemoryReleaser', () => {
  beforeEach(() => mock.timers.enable({ apis: ['setTimeout'] }))
  afterEach(() => mock.timers.reset())

  it('releases once after the threshold and a quiet spell, counting every record of the load', () => {
    const { memory, releases, collected } = releaser(1_000)
    memory.load(600)
    mock.timers.tick(60_000)
    assert.equal(collected(), 0, 'below the threshold: nothing')
    memory.load(500)
    mock.timers.tick(49)
    assert.equal(collected(), 0, 'not before the quiet spell is over')
    mock.timers.tick(1)
    assert.equal(collected(), 1)
    assert.equal(releases.length, 1)
    assert.equal(releases[0]!.records, 1_100)
    assert.ok(releases[0]!.rssBefore > 0 && releases[0]!.rssAfter > 0)
    assert.equal(memory.loaded, 0)
    mock.timers.tick(60_000)
    assert.equal(collected(), 1, 'once per load')
    memory.close()
  })

  it('waits until a pause is harmless, and never releases with a threshold of 0 or once closed', () => {
    let harmless = false
    const waiting = releaser(10, () => harmless)
    waiting.memory.load(10)
    mock.timers.tick(60_000)
    assert.equal(waiting.collected(), 0, 'not while a pause would hurt')
    harmless = true
    mock.timers.tick(1_000)
    assert.equal(waiting.collected(), 1, 'at the next retry once harmless')
    waiting.memory.close()

    const never = releaser(0)
    never.memory.load(1_000_000)
    const closed = releaser(10)
    closed.memory.load(10)
    closed.memory.close()
    mock.timers.tick(60_000)
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
