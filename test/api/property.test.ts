import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { parseManifests, validateResource } from '../../src/api/index.ts'
import { ShoalError } from '../../src/errors/index.ts'

const valid = [
  {
    apiVersion: 'sources.knative.dev/v1beta1',
    kind: 'KafkaSource',
    metadata: { name: 'orders', labels: { app: 'shop' } },
    spec: {
      bootstrapServers: ['kafka:9092'],
      topics: ['orders'],
      consumers: 3,
      delivery: { retry: 2, backoffDelay: 'PT1S', deadLetterSink: { uri: 'http://dls.example.com' } },
      sink: { ref: { apiVersion: 'v1', kind: 'Service', name: 'display' } }
    }
  },
  {
    apiVersion: 'sources.knative.dev/v1',
    kind: 'PingSource',
    metadata: { name: 'beat' },
    spec: {
      schedule: '0 * * * *',
      timezone: 'Europe/Paris',
      data: '{}',
      contentType: 'application/json',
      sink: { uri: 'http://x.example.com' }
    }
  }
]

/** Replaces one value somewhere in `base` by `replacement`. */
function mutate(base: unknown, pick: number, replacement: unknown): unknown {
  const copy = structuredClone(base)
  const slots: Array<[Record<string, unknown> | unknown[], string | number]> = []
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) node.forEach((child, i) => (slots.push([node, i]), walk(child)))
    else if (typeof node === 'object' && node !== null) {
      for (const [key, child] of Object.entries(node)) {
        slots.push([node as Record<string, unknown>, key])
        walk(child)
      }
    }
  }
  walk(copy)
  const slot = slots[pick % slots.length]
  if (slot !== undefined) (slot[0] as Record<string | number, unknown>)[slot[1]] = replacement
  return copy
}

function validateOrShoalError(input: unknown): void {
  try {
    const output = validateResource(input)
    assert.deepEqual(validateResource(JSON.parse(JSON.stringify(output))), output, 'validation is idempotent')
  } catch (error) {
    if (!(error instanceof ShoalError)) throw error
    assert.ok(['SHOAL_INVALID', 'SHOAL_UNKNOWN_KIND'].includes(error.code))
    if (error.code === 'SHOAL_INVALID') assert.ok(error.fields.length > 0)
  }
}

describe('validateResource on arbitrary input', () => {
  it('throws nothing but ShoalError on arbitrary JSON', () => {
    fc.assert(fc.property(fc.jsonValue(), validateOrShoalError), { numRuns: 2000 })
  })

  it('throws nothing but ShoalError on arbitrary JSON with a served apiVersion and kind', () => {
    const typed = fc.record({
      apiVersion: fc.constantFrom('sources.knative.dev/v1beta1', 'sources.knative.dev/v1'),
      kind: fc.constantFrom('KafkaSource', 'PingSource'),
      metadata: fc.oneof(fc.jsonValue(), fc.record({ name: fc.string() })),
      spec: fc.jsonValue()
    })
    fc.assert(fc.property(typed, validateOrShoalError), { numRuns: 2000 })
  })

  it('throws nothing but ShoalError on valid manifests with one value replaced', () => {
    fc.assert(
      fc.property(fc.constantFrom(...valid), fc.nat(), fc.jsonValue(), (base, pick, value) =>
        validateOrShoalError(mutate(base, pick, value))
      ),
      { numRuns: 3000 }
    )
  })

  it('parseManifests throws nothing but ShoalError on arbitrary text', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 300 }), text => {
        try {
          for (const doc of parseManifests(text)) validateOrShoalError(doc)
        } catch (error) {
          if (!(error instanceof ShoalError)) throw error
        }
      }),
      { numRuns: 2000 }
    )
  })
})
