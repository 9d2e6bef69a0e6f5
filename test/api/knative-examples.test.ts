import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { parseManifests, validateResource } from '../../src/api/index.ts'
import * as examples from './knative-examples.ts'
import { catchShoal } from './helpers.ts'

function one(text: string): unknown {
  const docs = parseManifests(text)
  assert.equal(docs.length, 1)
  return docs[0]
}

/** Every field of `input` is in `output` unchanged (output may add defaults). */
function assertContains(output: unknown, input: unknown, path = ''): void {
  if (typeof input !== 'object' || input === null) {
    assert.deepEqual(output, input, path)
    return
  }
  assert.equal(typeof output, 'object', path)
  if (Array.isArray(input)) assert.equal((output as unknown[]).length, input.length, path)
  for (const [key, value] of Object.entries(input)) {
    assertContains((output as Record<string, unknown>)[key], value, `${path}.${key}`)
  }
}

describe('Knative documentation examples', () => {
  const accepted = {
    kafkaSourceBasic: examples.kafkaSourceBasic,
    kafkaSourceScaling: examples.kafkaSourceScaling,
    kafkaSourceDelivery: examples.kafkaSourceDelivery,
    kafkaSourceKeyType: examples.kafkaSourceKeyType,
    kafkaSourceInitialOffset: examples.kafkaSourceInitialOffset,
    kafkaSourceTls: examples.kafkaSourceTls,
    kafkaSourceSasl: examples.kafkaSourceSasl,
    pingSourceJson: examples.pingSourceJson,
    pingSourceBinary: examples.pingSourceBinary
  }

  for (const [name, text] of Object.entries(accepted)) {
    it(`${name} validates, keeps every field, and validates again to itself`, () => {
      const input = one(text)
      const output = validateResource(input)
      assertContains(output, input)
      assert.deepEqual(validateResource(JSON.parse(JSON.stringify(output))), output)
    })
  }

  it('the basic KafkaSource gets Knative defaults', () => {
    const source = validateResource(one(examples.kafkaSourceBasic))
    assert.equal(source.kind, 'KafkaSource')
    if (source.kind !== 'KafkaSource') return
    assert.equal(source.metadata.namespace, 'default')
    assert.equal(source.spec.consumers, 1)
    assert.equal(source.spec.initialOffset, 'latest')
    assert.equal(source.spec.ordering, 'ordered')
    assert.equal(source.spec.consumerGroup, 'knative-group')
    assert.equal(source.spec.sink.ref?.namespace, 'default')
  })

  it('the delivery example keeps its dead letter sink and durations', () => {
    const source = validateResource(one(examples.kafkaSourceDelivery))
    assert.ok(source.kind === 'KafkaSource')
    assert.deepEqual(source.spec.delivery, {
      deadLetterSink: {
        ref: { apiVersion: 'serving.knative.dev/v1', kind: 'Service', name: 'example-sink', namespace: 'default' }
      },
      backoffDelay: 'PT0.5S',
      backoffPolicy: 'exponential',
      retry: 5
    })
  })

  it('the PingSource keeps its namespace, schedule and data', () => {
    const source = validateResource(one(examples.pingSourceJson))
    assert.ok(source.kind === 'PingSource')
    assert.equal(source.metadata.namespace, 'pingsource-example')
    assert.equal(source.spec.schedule, '*/1 * * * *')
    assert.equal(source.spec.data, '{"message": "Hello world!"}')
    assert.equal(source.spec.sink.ref?.namespace, 'pingsource-example')
  })

  it('the ceOverrides example applies unchanged: its unquoted number is taken as a string', () => {
    const resource = validateResource(one(examples.pingSourceCeOverrides))
    assert.ok(resource.kind === 'PingSource')
    assert.deepEqual(resource.spec.ceOverrides, {
      extensions: { extra: 'this is an extra attribute', additional: '42' }
    })
  })

  it('a v1beta2 PingSource is taken as the same object at v1, the version Shoal stores', () => {
    const resource = validateResource(one(examples.pingSourceV1beta2))
    assert.equal(resource.apiVersion, 'sources.knative.dev/v1')
    assert.equal(resource.kind, 'PingSource')
    const error = catchShoal(
      () =>
        validateResource({
          ...(one(examples.pingSourceV1beta2) as object),
          apiVersion: 'sources.knative.dev/v1alpha2'
        }),
      'SHOAL_UNKNOWN_KIND'
    )
    assert.match(
      error.message,
      /PingSource is served as sources\.knative\.dev\/v1 or sources\.knative\.dev\/v1beta2, not sources\.knative\.dev\/v1alpha2/
    )
    assert.match(error.message, /KafkaSource \(sources\.knative\.dev\/v1beta1, sources\.knative\.dev\/v1\)/)
  })

  it('all examples in one multi-document stream parse to one object each', () => {
    const all = Object.values(accepted).join('\n---\n')
    assert.equal(parseManifests(all).length, Object.keys(accepted).length)
  })
})
