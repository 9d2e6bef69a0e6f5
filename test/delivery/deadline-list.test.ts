import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { DeadlineList } from '../../src/delivery/deadline-list.ts'
import type { Deadline } from '../../src/delivery/deadline-list.ts'
import { eventually } from '../helpers/wait.ts'

function node(name: string, expired: string[]): Deadline {
  return { deadlineAt: 0, prevDeadline: undefined, nextDeadline: undefined, expire: () => expired.push(name) }
}

describe('DeadlineList', () => {
  it('expires in the order added, and never a node taken off', async () => {
    const expired: string[] = []
    const list = new DeadlineList(20)
    const [a, b, c, d] = ['a', 'b', 'c', 'd'].map(name => node(name, expired))
    list.add(a!)
    list.add(b!)
    list.add(c!)
    list.remove(b!)
    list.remove(b!) // twice: still a no-op
    await eventually(async () => (expired.length === 2 ? true : undefined), 30_000, 'a and c')
    list.add(d!) // after the timer fired and the list ran empty: armed again
    await eventually(async () => (expired.length === 3 ? true : undefined), 30_000, 'd')
    assert.deepEqual(expired, ['a', 'c', 'd'])
  })

  it('holds no timer once empty, so a process with none pending can exit', async () => {
    const list = new DeadlineList(3_600_000)
    const expired: string[] = []
    const nodes = ['a', 'b'].map(name => node(name, expired))
    for (const n of nodes) list.add(n)
    for (const n of nodes) list.remove(n)
    // A timer left armed for an hour would keep this test file's process alive: the runner would not finish.
    assert.deepEqual(expired, [])
  })
})
