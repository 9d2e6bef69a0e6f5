import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { FairLimiter } from '../../src/delivery/fair-limiter.ts'

describe('FairLimiter', () => {
  it('never lets more than its capacity hold a slot', async () => {
    const limiter = new FairLimiter(2)
    let holding = 0
    let most = 0
    await Promise.all(
      Array.from({ length: 20 }, async (_, i) => {
        await limiter.acquire(`k${i % 3}`)
        holding++
        most = Math.max(most, holding)
        await new Promise(resolve => setImmediate(resolve))
        holding--
        limiter.release()
      })
    )
    assert.equal(most, 2)
    assert.equal(limiter.inUse, 0)
    assert.equal(limiter.waiting, 0)
  })

  it('serves keys round-robin, each key FIFO: a long queue does not starve a short one', async () => {
    const limiter = new FairLimiter(1)
    await limiter.acquire('hog')
    const order: string[] = []
    const waits = [
      ...Array.from({ length: 5 }, (_, i) => limiter.acquire('hog').then(() => order.push(`hog${i}`))),
      limiter.acquire('small').then(() => order.push('small0')),
      limiter.acquire('small').then(() => order.push('small1'))
    ]
    for (let i = 0; i < 7; i++) {
      limiter.release()
      await new Promise(resolve => setImmediate(resolve))
    }
    await Promise.all(waits)
    assert.deepEqual(order, ['hog0', 'small0', 'hog1', 'small1', 'hog2', 'hog3', 'hog4'])
  })

  it('an aborted waiter leaves the queue and rejects with the abort reason', async () => {
    const limiter = new FairLimiter(1)
    await limiter.acquire('a')
    const controller = new AbortController()
    const aborted = limiter.acquire('b', controller.signal)
    const kept = limiter.acquire('c')
    assert.equal(limiter.waiting, 2)
    controller.abort(new Error('shutdown'))
    await assert.rejects(aborted, /shutdown/)
    assert.equal(limiter.waiting, 1)
    limiter.release()
    await kept
    assert.equal(limiter.inUse, 1)
    limiter.release()
    assert.equal(limiter.inUse, 0)
    assert.throws(() => limiter.release(), /without a matching acquire/)
  })
})
