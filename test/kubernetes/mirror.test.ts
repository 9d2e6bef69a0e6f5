import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { KafkaSourceKind } from '../../src/api/index.ts'
import {
  CLAIM_KEY,
  SPEC_ANNOTATION,
  claims,
  inSync,
  kubeStatus,
  refusedStatus,
  shoalManifest
} from '../../src/kubernetes/mirror.ts'
import type { KubeSource } from '../../src/kubernetes/mirror.ts'

const source = (extra: Partial<KubeSource['metadata']> = {}, status?: unknown): KubeSource => ({
  apiVersion: 'sources.knative.dev/v1beta1',
  kind: 'KafkaSource',
  metadata: { name: 'orders', namespace: 'team-a', generation: 3, ...extra },
  spec: { topics: ['orders'], bootstrapServers: ['kafka:9092'], sink: { uri: 'http://sink/' } },
  ...(status === undefined ? {} : { status })
})

describe('the claim on a Kubernetes source', () => {
  it('is the namespace label, or the object annotation, which wins either way', () => {
    assert.equal(claims(source(), {}, 'labelled'), false)
    assert.equal(claims(source(), { [CLAIM_KEY]: 'shoal' }, 'labelled'), true)
    assert.equal(claims(source({ annotations: { [CLAIM_KEY]: 'shoal' } }), {}, 'labelled'), true)
    assert.equal(
      claims(source({ annotations: { [CLAIM_KEY]: 'knative' } }), { [CLAIM_KEY]: 'shoal' }, 'labelled'),
      false
    )
    assert.equal(claims(source(), {}, 'all'), true)
    assert.equal(claims(source({ annotations: { [CLAIM_KEY]: 'knative' } }), {}, 'all'), false)
  })
})

describe('the Shoal manifest of a Kubernetes source', () => {
  it('keeps identity, labels, annotations and spec, drops what kubectl writes for itself, and marks the spec it came from', () => {
    const object = source({
      labels: { team: 'a' },
      annotations: { 'kubectl.kubernetes.io/last-applied-configuration': '{}', 'shoal.dev/x': 'y' },
      uid: 'u-1',
      finalizers: ['sources.shoal.dev/delivery']
    })
    const manifest = shoalManifest(object, KafkaSourceKind)
    const mark = manifest.metadata.annotations?.[SPEC_ANNOTATION] ?? ''
    assert.match(mark, /^3\/[0-9a-f]{16}$/)
    assert.deepEqual(manifest, {
      apiVersion: 'sources.knative.dev/v1beta1',
      kind: 'KafkaSource',
      metadata: {
        name: 'orders',
        namespace: 'team-a',
        labels: { team: 'a' },
        annotations: { 'shoal.dev/x': 'y', [SPEC_ANNOTATION]: mark }
      },
      spec: source().spec
    })
    // Another spec (a sink resolved elsewhere) is another mark, at the same generation.
    const moved = shoalManifest(object, KafkaSourceKind, { ...(source().spec as object), sink: { uri: 'http://b/' } })
    assert.notEqual(moved.metadata.annotations?.[SPEC_ANNOTATION], mark)
  })

  it("is in sync with Shoal's copy by labels and annotations, the mark among them, whatever defaults Shoal added", () => {
    const manifest = shoalManifest(source({ labels: { team: 'a' } }), KafkaSourceKind)
    const copy = { metadata: manifest.metadata, spec: { ...(manifest.spec as object), initialOffset: 'latest' } }
    assert.equal(inSync(copy, manifest), true)
    assert.equal(inSync({ ...copy, metadata: { ...copy.metadata, labels: {} } }, manifest), false)
    assert.equal(inSync(copy, shoalManifest(source({ labels: { team: 'a' }, generation: 4 }), KafkaSourceKind)), false)
  })
})

describe('the status written back', () => {
  const manifest = shoalManifest(source(), KafkaSourceKind)
  const ready = [{ type: 'Ready', status: 'True' }]

  it("counts the Kubernetes object's generation observed once Shoal holds its spec and observed its own latest", () => {
    const status = kubeStatus(
      source(),
      { metadata: { ...manifest.metadata, generation: 7 }, status: { observedGeneration: 7, conditions: ready } },
      manifest
    )
    assert.deepEqual(status, { conditions: ready, observedGeneration: 3 })
  })

  it('keeps the previous observedGeneration while Shoal holds another spec or has not observed it', () => {
    const behind = kubeStatus(
      source({}, { observedGeneration: 2 }),
      { metadata: { ...manifest.metadata, generation: 7 }, status: { observedGeneration: 6, conditions: ready } },
      manifest
    )
    assert.equal(behind['observedGeneration'], 2)
    const other = kubeStatus(
      source({}, { observedGeneration: 2 }),
      { metadata: { generation: 7 }, status: { observedGeneration: 7 } },
      manifest
    )
    assert.equal(other['observedGeneration'], 2)
  })

  it('says a refusal as Ready False with the reason, keeping the transition time while it stands', () => {
    const first = refusedStatus(source(), 'Invalid', 'spec.topics: required', new Date('2026-01-01T00:00:00Z'))
    assert.deepEqual(first['conditions'], [
      {
        type: 'Ready',
        status: 'False',
        reason: 'Invalid',
        message: 'spec.topics: required',
        lastTransitionTime: '2026-01-01T00:00:00.000Z'
      }
    ])
    const again = refusedStatus(source({}, first), 'Invalid', 'spec.topics: required', new Date('2026-01-02T00:00:00Z'))
    assert.deepEqual(again['conditions'], first['conditions'])
    assert.equal(again['observedGeneration'], 3)
  })
})
