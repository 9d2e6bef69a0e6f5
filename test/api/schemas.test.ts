import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { Ajv } from 'ajv'
import { defaultConsumerGroup, sourceKinds, schemas } from '../../src/api/index.ts'

describe('schemas', () => {
  it('has a frozen, JSON-serialisable schema for every kind', () => {
    for (const kind of sourceKinds) {
      const schema = schemas[kind.kind]
      assert.ok(schema !== undefined, kind.kind)
      assert.ok(Object.isFrozen(schema))
      assert.deepEqual(JSON.parse(JSON.stringify(schema)), schema)
    }
  })

  it('compiles with a plain Ajv and refuses unknown fields', () => {
    const ajv = new Ajv({ allErrors: true, allowUnionTypes: true })
    const validate = ajv.compile(JSON.parse(JSON.stringify(schemas['PingSource'])))
    const manifest = {
      apiVersion: 'sources.knative.dev/v1',
      kind: 'PingSource',
      metadata: { name: 'beat' },
      spec: { sink: { uri: 'http://x.example.com' } }
    }
    assert.equal(validate(manifest), true)
    assert.equal(validate({ ...manifest, spec: { ...manifest.spec, bogus: 1 } }), false)
  })
})

describe('defaultConsumerGroup', () => {
  it("is Knative's knative-kafka-source-<uid>", () => {
    assert.equal(defaultConsumerGroup('1234-abcd'), 'knative-kafka-source-1234-abcd')
  })
})
