import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { BATCH_ANNOTATIONS, BATCH_DEFAULTS, batchSettingsOf, validateResource } from '../../src/api/index.ts'
import { edit, expectInvalidPaths, kafkaSourceManifest } from './helpers.ts'

const kafka = kafkaSourceManifest

const { maxEvents, maxBytes, maxWait } = BATCH_ANNOTATIONS

describe('batch annotations', () => {
  it('a source without them does not batch', () => {
    const source = validateResource(kafka)
    assert.equal(batchSettingsOf(source.metadata), undefined)
  })

  it('max events turns batching on; bytes and wait default, or are read', () => {
    const only = validateResource(edit(kafka, { 'metadata.annotations': { [maxEvents]: '100' } }))
    assert.deepEqual(batchSettingsOf(only.metadata), {
      maxEvents: 100,
      maxBytes: BATCH_DEFAULTS.maxBytes,
      maxWaitMs: BATCH_DEFAULTS.maxWaitMs
    })
    const all = validateResource(
      edit(kafka, { 'metadata.annotations': { [maxEvents]: '2', [maxBytes]: '4096', [maxWait]: 'PT0.2S' } })
    )
    assert.deepEqual(batchSettingsOf(all.metadata), { maxEvents: 2, maxBytes: 4096, maxWaitMs: 200 })
  })

  it('refuses bad values, each error naming its annotation', () => {
    const messages = expectInvalidPaths(
      () =>
        validateResource(
          edit(kafka, { 'metadata.annotations': { [maxEvents]: '1', [maxBytes]: '12x', [maxWait]: 'PT11S' } })
        ),
      [
        `metadata.annotations["${maxEvents}"]`,
        `metadata.annotations["${maxBytes}"]`,
        `metadata.annotations["${maxWait}"]`
      ]
    )
    for (const [path, message] of messages) {
      const name = /\["(.+)"\]/.exec(path)![1]!
      assert.ok(message.includes(name), message)
    }
    expectInvalidPaths(
      () => validateResource(edit(kafka, { 'metadata.annotations': { [maxEvents]: '1001' } })),
      [`metadata.annotations["${maxEvents}"]`]
    )
  })

  it('refuses bytes or wait without max events', () => {
    const messages = expectInvalidPaths(
      () => validateResource(edit(kafka, { 'metadata.annotations': { [maxWait]: 'PT1S' } })),
      [`metadata.annotations["${maxWait}"]`]
    )
    assert.match([...messages.values()][0]!, new RegExp(maxEvents))
  })

  it('takes batches with every ordering, key included', () => {
    const annotated = edit(kafka, { 'metadata.annotations': { [maxEvents]: '10' } })
    for (const ordering of ['ordered', 'unordered', 'key']) {
      const valid = validateResource(edit(annotated, { 'spec.ordering': ordering }))
      assert.equal(batchSettingsOf(valid.metadata)?.maxEvents, 10)
      assert.equal((valid.spec as { ordering: string }).ordering, ordering)
    }
  })
})
