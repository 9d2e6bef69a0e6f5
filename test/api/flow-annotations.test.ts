import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { FLOW_ANNOTATIONS, parseFlowControl, validateResource } from '../../src/api/index.ts'
import { edit, expectInvalidPaths, kafkaSourceManifest } from './helpers.ts'

const kafka = kafkaSourceManifest

describe('flow control annotations', () => {
  it('a manifest without them is valid and asks for none', () => {
    const source = validateResource(kafka)
    assert.deepEqual(parseFlowControl(source.metadata.annotations), { kind: 'none' })
  })

  it('reads the three annotations', () => {
    const annotations = {
      [FLOW_ANNOTATIONS.maxConcurrency]: '8',
      [FLOW_ANNOTATIONS.maxRate]: '0.5',
      [FLOW_ANNOTATIONS.adaptive]: 'true'
    }
    validateResource(edit(kafka, { 'metadata.annotations': annotations }))
    assert.deepEqual(parseFlowControl(annotations), {
      kind: 'flow',
      flow: { maxConcurrency: 8, maxRate: 0.5, adaptive: true }
    })
    assert.deepEqual(parseFlowControl({ [FLOW_ANNOTATIONS.adaptive]: 'false' }), { kind: 'none' })
  })

  it('refuses bad values with an error naming the annotation', () => {
    const messages = expectInvalidPaths(
      () =>
        validateResource(
          edit(kafka, {
            'metadata.annotations': {
              [FLOW_ANNOTATIONS.maxConcurrency]: '0',
              [FLOW_ANNOTATIONS.maxRate]: 'fast',
              [FLOW_ANNOTATIONS.adaptive]: 'yes'
            }
          })
        ),
      [
        `metadata.annotations["${FLOW_ANNOTATIONS.maxConcurrency}"]`,
        `metadata.annotations["${FLOW_ANNOTATIONS.maxRate}"]`,
        `metadata.annotations["${FLOW_ANNOTATIONS.adaptive}"]`
      ]
    )
    assert.match(messages.get(`metadata.annotations["${FLOW_ANNOTATIONS.maxConcurrency}"]`) ?? '', /integer from 1/)
    for (const bad of ['1.5', '-1', '10001', ' 2', '']) {
      assert.equal(parseFlowControl({ [FLOW_ANNOTATIONS.maxConcurrency]: bad }).kind, 'invalid', bad)
    }
    for (const bad of ['0', '1e3', '100001', '.5']) {
      assert.equal(parseFlowControl({ [FLOW_ANNOTATIONS.maxRate]: bad }).kind, 'invalid', bad)
    }
  })
})
