import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { SchedulerLeader } from '../../src/leader/index.ts'
import type { SchedulerLeaderOptions } from '../../src/leader/index.ts'
import { eventually } from '../helpers/wait.ts'

// The leadership's own retry, with terms of the test's making: which term opens or fails is all that matters here.
describe('the scheduler leadership', () => {
  it('is taken again when a term could not start (Kafka refused the transactional id for a while)', async () => {
    const logged: string[] = []
    const store = { isLeader: true, onAssignment: () => undefined, offAssignment: () => undefined }
    const options = {
      store,
      log: (_level: string, message: string) => logged.push(message)
    } as unknown as SchedulerLeaderOptions
    let made = 0
    const leader = new SchedulerLeader(options, () => {
      made += 1
      const attempt = made
      return {
        deposed: false,
        start: async () => {
          if (attempt === 1) throw new Error('This is not the correct coordinator.')
        },
        stop: async () => undefined
      } as never
    })
    leader.start()
    try {
      const term = await eventually(
        () => leader.term,
        10_000,
        () => `a term that started (${made} made)`
      )
      assert.equal(made, 2)
      assert.ok(term)
      assert.deepEqual(logged, ['could not take the scheduler leadership; trying again'])
    } finally {
      await leader.stop()
    }
  })
})
