import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { OTHER_SOURCE, otherLabels, rankSources, sourceLabels } from '../../src/metrics/index.ts'

describe('source labels', () => {
  it('split a source key into kind and namespace/name', () => {
    assert.deepEqual(sourceLabels('KafkaSource/default/orders'), { source: 'default/orders', kind: 'KafkaSource' })
    assert.deepEqual(otherLabels('PingSource/a/b'), { source: OTHER_SOURCE, kind: 'PingSource' })
    assert.deepEqual(sourceLabels('odd'), { source: 'odd', kind: 'unknown' })
  })
})

describe('rankSources', () => {
  const scores = (entries: Record<string, number>) => new Map(Object.entries(entries))

  it('labels every candidate while there is room', () => {
    assert.deepEqual(rankSources(scores({ a: 0, b: 5 }), new Set(), 2), new Set(['a', 'b']))
  })

  it('keeps the busiest: deliveries since the last ranking plus in-flight records', () => {
    assert.deepEqual(rankSources(scores({ a: 1, b: 9, c: 5, d: 0 }), new Set(['a', 'd']), 2), new Set(['b', 'c']))
  })

  it('on a tie keeps the sources labelled already, so series do not flap', () => {
    assert.deepEqual(rankSources(scores({ a: 3, b: 3, c: 3 }), new Set(['c']), 1), new Set(['c']))
    assert.deepEqual(rankSources(scores({ a: 3, b: 3, c: 3 }), new Set(), 2), new Set(['a', 'b']))
  })

  it('drops sources that are no longer candidates, and labels none with max 0', () => {
    assert.deepEqual(rankSources(scores({ b: 1 }), new Set(['a']), 5), new Set(['b']))
    assert.deepEqual(rankSources(scores({ a: 1 }), new Set(), 0), new Set())
  })
})
