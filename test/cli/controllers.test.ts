import assert from 'node:assert/strict'
import { test } from 'node:test'
import { bucketRanges, currentReplicas, isControllersGet } from '../../src/cli/controllers.ts'

test('bucket lists read as ranges', () => {
  assert.equal(bucketRanges([]), '<none>')
  assert.equal(bucketRanges([3]), '3')
  assert.equal(bucketRanges([5, 0, 1, 2, 7, 8]), '0-2,5,7-8')
})

test('only the replicas of the newest generation are current', () => {
  const replica = (replicaId: string, generation: number) => ({
    replicaId,
    url: `http://${replicaId}`,
    generation,
    buckets: [],
    since: '',
    leader: false
  })
  const current = currentReplicas([replica('c', 4), replica('killed', 3), replica('a', 4)])
  assert.deepEqual(
    current.map(r => r.replicaId),
    ['a', 'c']
  )
})

test('`get controllers` is told apart from the stored kinds', () => {
  assert.equal(isControllersGet(['controllers']), true)
  assert.equal(isControllersGet(['ctrl', '-o', 'wide']), true)
  assert.equal(isControllersGet(['ks']), false)
  // A flag's value is not the resource type: `shoal -s URL get controllers` (global flags before the command).
  assert.equal(isControllersGet(['-s', 'http://127.0.0.1:8080', 'controllers']), true)
  assert.equal(isControllersGet(['--server', 'http://h:1', '-o', 'json', 'ctrl']), true)
  assert.equal(isControllersGet(['-s', 'http://h:1', 'ks']), false)
})
