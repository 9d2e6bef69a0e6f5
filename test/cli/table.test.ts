import assert from 'node:assert/strict'
import { test } from 'node:test'
import { alignRows, describeLayout, renderTable } from '../../src/cli/table.ts'

test('tables separate columns by at least three spaces and upper-case the header', () => {
  const text = renderTable(
    ['name', 'ready', 'age'],
    [
      ['a', 'True', '5s'],
      ['much-longer-name', 'False', '3m']
    ]
  )
  assert.equal(
    text,
    ['NAME               READY   AGE', 'a                  True    5s', 'much-longer-name   False   3m', ''].join('\n')
  )
})

test('a column is at least six wide, as under kubectl', () => {
  assert.equal(renderTable(['a', 'b'], [['x', 'y']]), 'A     B\nx     y\n')
})

test('trailing empty cells leave no trailing spaces', () => {
  assert.equal(renderTable(['name', 'reason'], [['x', '']]), 'NAME   REASON\nx\n')
})

test('a line with fewer cells ends an alignment block (tabwriter semantics)', () => {
  const lines = alignRows(
    [['Name:', 'x'], ['Annotations:', '<none>'], ['Spec:'], ['  Consumers:', '1'], ['  Topics:', 't']],
    describeLayout
  )
  assert.deepEqual(lines, ['Name:         x', 'Annotations:  <none>', 'Spec:', '  Consumers:  1', '  Topics:     t'])
})
