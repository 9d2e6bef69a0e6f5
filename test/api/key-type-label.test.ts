import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { KEY_TYPE_LABEL, keyTypeOf, validateResource } from '../../src/api/index.ts'
import { edit, kafkaSourceManifest } from './helpers.ts'

describe('keyTypeOf: the key-type label, read as Knative reads it', () => {
  it('each of Knative’s four values, from metadata.labels', () => {
    for (const keyType of ['string', 'int', 'float', 'byte-array'] as const) {
      assert.deepEqual(keyTypeOf({ labels: { [KEY_TYPE_LABEL]: keyType } }), { keyType })
    }
  })

  it('no label, or an empty one: string, without a warning', () => {
    assert.deepEqual(keyTypeOf({}), { keyType: 'string' })
    assert.deepEqual(keyTypeOf({ labels: { other: 'int' } }), { keyType: 'string' })
    assert.deepEqual(keyTypeOf({ labels: { [KEY_TYPE_LABEL]: '' } }), { keyType: 'string' })
  })

  it('any other value falls back to string, with a warning naming the label and the allowed values', () => {
    for (const value of ['long', 'Int', 'INT', 'double', 'bytes', ' int']) {
      const setting = keyTypeOf({ labels: { [KEY_TYPE_LABEL]: value } })
      assert.equal(setting.keyType, 'string', value)
      assert.match(setting.warning ?? '', /^metadata\.labels\["kafkasources\.sources\.knative\.dev\/key-type"\]: /)
      assert.match(setting.warning ?? '', /string, int, float, byte-array/)
      assert.ok(setting.warning?.includes(JSON.stringify(value)))
    }
  })

  it('as an annotation it is taken too (Knative ignores it), with a warning that says so; the label wins', () => {
    const annotated = keyTypeOf({ annotations: { [KEY_TYPE_LABEL]: 'int' } })
    assert.equal(annotated.keyType, 'int')
    assert.match(
      annotated.warning ?? '',
      /^metadata\.annotations\["kafkasources\.sources\.knative\.dev\/key-type"\]: taken as the key type, but Knative reads only the label/
    )
    const unknown = keyTypeOf({ annotations: { [KEY_TYPE_LABEL]: 'long' } })
    assert.equal(unknown.keyType, 'string')
    assert.match(unknown.warning ?? '', /unknown key type "long"/)
    assert.deepEqual(keyTypeOf({ labels: { [KEY_TYPE_LABEL]: 'float' }, annotations: { [KEY_TYPE_LABEL]: 'int' } }), {
      keyType: 'float'
    })
  })

  it('a KafkaSource with the label applies whatever its value (Knative’s KafkaSource webhook checks none either)', () => {
    for (const value of ['int', 'long']) {
      const source = validateResource(edit(kafkaSourceManifest, { 'metadata.labels': { [KEY_TYPE_LABEL]: value } }))
      assert.equal(source.metadata.labels?.[KEY_TYPE_LABEL], value)
    }
  })
})
