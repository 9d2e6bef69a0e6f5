import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { CONNECT_WINDOW_DEFAULTS, ConnectWindow } from '../../src/delivery/connect-window.ts'
import type { ConnectVerdict } from '../../src/delivery/connect-window.ts'
import { parseTcpTable } from '../../src/delivery/tcp-queues.ts'
import { FairLimiter } from '../../src/delivery/fair-limiter.ts'

const VERDICTS: readonly ConnectVerdict[] = [
  'proven',
  'proven-late',
  'never-accepted',
  'timed-out',
  'refused',
  'closed'
]

type Step = { kind: 'open' } | { kind: 'settle'; verdict: ConnectVerdict } | { kind: 'wait'; ms: number }

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.constant<Step>({ kind: 'open' }),
  fc.constantFrom(...VERDICTS).map<Step>(verdict => ({ kind: 'settle', verdict })),
  fc.integer({ min: 1, max: 3_000 }).map<Step>(ms => ({ kind: 'wait', ms }))
)

describe('ConnectWindow against a reference model', () => {
  it('never has more unproven connections than its window allowed when each opened, and moves as the model says', () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 200 }), steps => {
        const { initial, max, minPauseMs, maxPauseMs } = CONNECT_WINDOW_DEFAULTS
        const window = new ConnectWindow()
        // The model: a window, the unproven count, the pause after refusals.
        let model = { window: initial, unproven: 0, pause: 0, notBefore: Number.NEGATIVE_INFINITY }
        let now = 0
        for (const s of steps) {
          if (s.kind === 'wait') {
            now += s.ms
            continue
          }
          if (s.kind === 'open') {
            const allowed = model.unproven < model.window && now >= model.notBefore
            assert.equal(window.mayOpen(now), allowed)
            if (allowed) {
              window.opened(now)
              model = { ...model, unproven: model.unproven + 1 }
            } else assert.throws(() => window.opened(now), /connect window/)
          } else {
            if (model.unproven === 0) {
              assert.throws(() => window.settled(s.verdict, now), /connect window/)
              continue
            }
            window.settled(s.verdict, now)
            const unproven = model.unproven - 1
            switch (s.verdict) {
              case 'proven':
                model = { window: Math.min(max, model.window + 1), unproven, pause: 0, notBefore: -Infinity }
                break
              case 'proven-late':
                model = { window: Math.max(1, Math.floor(model.window / 2)), unproven, pause: 0, notBefore: -Infinity }
                break
              case 'never-accepted':
              case 'timed-out':
                model = { ...model, window: Math.max(1, Math.floor(model.window / 2)), unproven }
                break
              case 'refused': {
                const pause = model.pause === 0 ? minPauseMs : Math.min(maxPauseMs, model.pause * 2)
                model = { ...model, unproven, pause, notBefore: now + pause }
                break
              }
              case 'closed':
                model = { ...model, unproven }
            }
          }
          assert.equal(window.window, model.window)
          assert.equal(window.unproven, model.unproven)
          assert.ok(window.window >= 1 && window.window <= max)
          assert.ok(window.peakUnproven <= max)
        }
      })
    )
  })

  it('refuses bounds that make no window', () => {
    assert.throws(() => new ConnectWindow({ ...CONNECT_WINDOW_DEFAULTS, initial: 0 }), /initial/)
    assert.throws(() => new ConnectWindow({ ...CONNECT_WINDOW_DEFAULTS, initial: 4, max: 2 }), /initial/)
  })
})

describe('parseTcpTable', () => {
  it('reads the unacknowledged bytes of ESTABLISHED connections by local and remote port', () => {
    const text = [
      '  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode',
      '   0: 0100007F:A461 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 5050 1 0 100 0 0 10 0',
      '   1: 0100007F:C350 0100007F:1F90 01 000000B2:00000000 01:00000032 00000003     0        0 0 1 0 20 4 30 10 -1',
      '   2: 0100007F:C351 0100007F:1F90 01 00000000:00000000 00:00000000 00000000     0        0 77 1 0 20 4 30 10 -1',
      '   3: 00000000000000000000000001000000:D431 00000000000000000000000001000000:0050 01 00000010:00000000 00:0 0 0 0 1',
      'garbage line',
      ''
    ].join('\n')
    const table = parseTcpTable(text)
    assert.deepEqual(
      [...table].sort(),
      [
        ['50000>8080', 0xb2],
        ['50001>8080', 0],
        ['54321>80', 16]
      ].sort()
    )
  })

  it('never throws on what it cannot read', () => {
    fc.assert(fc.property(fc.string({ maxLength: 500 }), text => void parseTcpTable(text)))
  })
})

describe('FairLimiter.setLimit', () => {
  it('holds waiters while the limit is low and hands them the slots when it rises, never past capacity', async () => {
    const limiter = new FairLimiter(4)
    limiter.setLimit(1)
    await limiter.acquire('a')
    let served = 0
    const waits = [limiter.acquire('a'), limiter.acquire('b'), limiter.acquire('c')].map(p => p.then(() => served++))
    await new Promise(resolve => setImmediate(resolve))
    assert.equal(served, 0)
    limiter.setLimit(10)
    await Promise.all(waits)
    assert.equal(served, 3)
    assert.equal(limiter.inUse, 4)
    assert.equal(limiter.limit, 4)
    // Lowered under what is held: releases go back to the pool until the holders fit.
    limiter.setLimit(2)
    const late = limiter.acquire('d').then(() => served++)
    limiter.release()
    limiter.release()
    await new Promise(resolve => setImmediate(resolve))
    assert.equal(served, 3)
    limiter.release()
    await late
    assert.equal(served, 4)
    assert.equal(limiter.inUse, 2)
  })
})
