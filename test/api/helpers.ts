import assert from 'node:assert/strict'
import { validateResource, withStoredDefaults } from '../../src/api/index.ts'
import { ShoalError } from '../../src/errors/index.ts'
import type { ErrorCode } from '../../src/errors/index.ts'
import type { StoredEntry, StoredSource } from '../../src/store/index.ts'

/** Runs `fn`, asserts it throws a ShoalError with `code`, and returns the error. */
export function catchShoal(fn: () => unknown, code: ErrorCode): ShoalError {
  try {
    fn()
  } catch (error) {
    assert.ok(error instanceof ShoalError, `expected a ShoalError, got ${String(error)}`)
    assert.equal(error.code, code, error.message)
    return error
  }
  assert.fail(`expected ${code}, nothing was thrown`)
}

/** Asserts `fn` throws one SHOAL_INVALID whose fields are exactly `paths` (any order); returns path → message. */
export function expectInvalidPaths(fn: () => unknown, paths: readonly string[]): Map<string, string> {
  const error = catchShoal(fn, 'SHOAL_INVALID')
  const reported = error.fields.map(f => f.path)
  assert.deepEqual([...reported].sort(), [...paths].sort(), error.message)
  for (const field of error.fields) assert.ok(error.message.includes(`${field.path}: ${field.message}`))
  return new Map(error.fields.map(f => [f.path, f.message]))
}

/** A copy of `base` with each dotted path set to its value (undefined deletes); creates objects on the way. */
export function edit(base: unknown, changes: Record<string, unknown>): unknown {
  const copy = structuredClone(base) as Record<string, unknown>
  for (const [path, value] of Object.entries(changes)) {
    const keys = path.split('.')
    const last = keys.pop() as string
    let node = copy
    for (const key of keys) {
      if (typeof node[key] !== 'object' || node[key] === null) node[key] = {}
      node = node[key] as Record<string, unknown>
    }
    if (value === undefined) delete node[last]
    else node[last] = value
  }
  return copy
}

/** A minimal valid KafkaSource manifest, as a Knative user writes it. */
export const kafkaSourceManifest = {
  apiVersion: 'sources.knative.dev/v1beta1',
  kind: 'KafkaSource',
  metadata: { name: 'orders' },
  spec: {
    bootstrapServers: ['kafka-0.kafka:9092'],
    topics: ['orders'],
    sink: { uri: 'http://sink.example.com/events' }
  }
}

/**
 * `kafkaSourceManifest` (its spec merged with `spec`) as the store holds it, `KafkaSource/default/orders`, with
 * `vreplicas` placed on each of `placedOn`.
 */
export function storedKafkaSource(
  placedOn: readonly string[],
  spec: object = {},
  vreplicas = 1
): StoredEntry<StoredSource> {
  const key = 'KafkaSource/default/orders'
  const resource = validateResource({ ...kafkaSourceManifest, spec: { ...kafkaSourceManifest.spec, ...spec } })
  const metadata = { ...resource.metadata, uid: 'u1', generation: 1, creationTimestamp: '2026-01-01T00:00:00Z' }
  const object = withStoredDefaults({ ...resource, metadata }) as unknown as StoredSource
  return {
    key,
    bucket: 0,
    resourceVersion: '3',
    object,
    status: undefined,
    scheduling: {
      source: key,
      slot: 'consumer',
      placements: placedOn.map(podName => ({ podName, vreplicas })),
      pending: 0,
      epoch: 1,
      revision: 1,
      since: '2026-01-01T00:00:01Z'
    }
  }
}
