import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
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

  it('grants exactly as a reference round-robin model does, through any mix of acquires, releases and aborts', async () => {
    type Op = { kind: 'acquire'; key: number } | { kind: 'release' } | { kind: 'abort'; pick: number }
    const op = fc.oneof(
      fc.record({ kind: fc.constant('acquire' as const), key: fc.integer({ min: 0, max: 4 }) }),
      fc.record({ kind: fc.constant('release' as const) }),
      fc.record({ kind: fc.constant('abort' as const), pick: fc.nat() })
    )
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 3 }), fc.array(op, { maxLength: 80 }), async (capacity, ops: Op[]) => {
        const limiter = new FairLimiter(capacity)
        // The model: holders, and per key a FIFO of waiter ids; `round` lists keys with waiters in serving order.
        let held = 0
        const queues = new Map<number, number[]>()
        let round: number[] = []
        const granted: number[] = []
        const expected: number[] = []
        const pending = new Map<number, { key: number; controller: AbortController }>()
        let id = 0
        for (const o of ops) {
          if (o.kind === 'acquire') {
            const n = id++
            const controller = new AbortController()
            const waiting = [...queues.values()].some(q => q.length > 0)
            if (held < capacity && !waiting) {
              held++
              expected.push(n)
            } else {
              if (!queues.get(o.key)?.length) round.push(o.key)
              queues.set(o.key, [...(queues.get(o.key) ?? []), n])
              pending.set(n, { key: o.key, controller })
            }
            limiter.acquire(String(o.key), controller.signal).then(
              () => granted.push(n),
              () => undefined
            )
          } else if (o.kind === 'release') {
            if (held === 0) continue
            const key = round.shift()
            if (key === undefined) held--
            else {
              const queue = queues.get(key)!
              const n = queue.shift()!
              pending.delete(n)
              expected.push(n)
              if (queue.length > 0) round.push(key)
            }
            limiter.release()
          } else {
            const ids = [...pending.keys()]
            if (ids.length === 0) continue
            const n = ids[o.pick % ids.length]!
            const { key, controller } = pending.get(n)!
            pending.delete(n)
            const queue = queues.get(key)!.filter(x => x !== n)
            queues.set(key, queue)
            if (queue.length === 0) round = round.filter(k => k !== key)
            controller.abort()
          }
          await new Promise(resolve => setImmediate(resolve))
        }
        assert.deepEqual(granted, expected)
        assert.equal(limiter.inUse, held)
        assert.equal(limiter.waiting, pending.size)
      }),
      { numRuns: 200 }
    )
  })
})
