import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import {
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  PatchStrategy,
  Watch,
  setHeaderOptions
} from '@kubernetes/client-node'
import type { KubernetesObject } from '@kubernetes/client-node'
import { uniqueName } from '../helpers/kafka.ts'
import { startApiServer } from '../helpers/kube-apiserver.ts'
import type { ApiServer } from '../helpers/kube-apiserver.ts'
import { eventually } from '../helpers/wait.ts'
import { applyDeploy } from './rig.ts'

// What operator mode gets from Knative's CRDs of deploy/kubernetes/crds on a real kube-apiserver, with no Shoal
// running: each object at every served version (no conversion webhook), watches, the status and scale subresources,
// and the test API server itself coming back from a restart ready for the next request.

const GROUP = 'sources.knative.dev'

let api: ApiServer
let config: KubeConfig
let custom: CustomObjectsApi
let core: CoreV1Api

type Source = KubernetesObject & { spec: Record<string, unknown>; status?: Record<string, unknown> }

before(async () => {
  api = await startApiServer()
  config = new KubeConfig()
  config.loadFromFile(api.kubeconfig)
  custom = config.makeApiClient(CustomObjectsApi)
  core = config.makeApiClient(CoreV1Api)
  await applyDeploy(api, [])
})

after(async () => {
  await api?.stop()
})

async function namespace(): Promise<string> {
  const name = uniqueName('ns')
    .toLowerCase()
    .replace(/[^a-z0-9-]/g, '-')
    .slice(0, 50)
  await core.createNamespace({ body: { metadata: { name } } })
  return name
}

const pingSource = (ns: string): Source => ({
  apiVersion: `${GROUP}/v1`,
  kind: 'PingSource',
  metadata: { name: 'ping', namespace: ns },
  spec: { schedule: '*/1 * * * *', data: '{"message": "Hello world!"}', sink: { uri: 'http://sink.example/' } }
})

async function read(plural: string, version: string, ns: string, name: string): Promise<Source> {
  return (await custom.getNamespacedCustomObject({ group: GROUP, version, namespace: ns, plural, name })) as Source
}

async function list(plural: string, version: string, ns: string): Promise<Source[]> {
  const answer = (await custom.listNamespacedCustomObject({ group: GROUP, version, namespace: ns, plural })) as {
    items: Source[]
  }
  return answer.items
}

async function patchStatus(plural: string, version: string, ns: string, name: string, status: object) {
  await custom.patchNamespacedCustomObjectStatus(
    { group: GROUP, version, namespace: ns, plural, name, body: { status } },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch)
  )
}

describe("Knative's source CRDs on a real API server", () => {
  it('serve a PingSource created at v1 to a v1beta2 watch and list, and its status written through the subresource at both', async () => {
    const ns = await namespace()
    const seen: { type: string; apiVersion: string | undefined; name: string | undefined }[] = []
    let ended: string | undefined
    const watch = await new Watch(config).watch(
      `/apis/${GROUP}/v1beta2/namespaces/${ns}/pingsources`,
      {},
      (type, object: KubernetesObject) =>
        seen.push({ type, apiVersion: object.apiVersion, name: object.metadata?.name }),
      (error: unknown) => (ended = String(error))
    )
    try {
      await custom.createNamespacedCustomObject({
        group: GROUP,
        version: 'v1',
        namespace: ns,
        plural: 'pingsources',
        body: pingSource(ns)
      })
      await eventually(
        () => seen.length > 0,
        10_000,
        () => `an event on the watch${ended === undefined ? '' : ` (it ended: ${ended})`}`
      )
      assert.deepEqual(seen[0], { type: 'ADDED', apiVersion: `${GROUP}/v1beta2`, name: 'ping' })
    } finally {
      watch.abort()
    }
    assert.deepEqual(
      (await list('pingsources', 'v1', ns)).map(s => s.metadata?.name),
      ['ping']
    )
    const status = { conditions: [{ type: 'Ready', status: 'True', reason: 'Scheduled' }], sinkUri: 'http://sink/' }
    await patchStatus('pingsources', 'v1', ns, 'ping', status)
    for (const version of ['v1', 'v1beta2']) {
      const shown = await read('pingsources', version, ns, 'ping')
      assert.equal(shown.apiVersion, `${GROUP}/${version}`)
      assert.deepEqual(shown.status, status)
      assert.equal(shown.spec['schedule'], '*/1 * * * *')
    }
    // The main resource leaves status alone, as a controller writing status relies on.
    await custom.patchNamespacedCustomObject(
      {
        group: GROUP,
        version: 'v1',
        namespace: ns,
        plural: 'pingsources',
        name: 'ping',
        body: { spec: { data: '{}' }, status: { conditions: [] } }
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch)
    )
    const changed = await read('pingsources', 'v1beta2', ns, 'ping')
    assert.deepEqual(changed.status, status)
    assert.equal(changed.spec['data'], '{}')
    assert.equal(changed.metadata?.generation, 2)
  })

  it('serve a KafkaSource created at v1beta1 at v1, its consumers through the scale subresource', async () => {
    const ns = await namespace()
    await custom.createNamespacedCustomObject({
      group: GROUP,
      version: 'v1beta1',
      namespace: ns,
      plural: 'kafkasources',
      body: {
        apiVersion: `${GROUP}/v1beta1`,
        kind: 'KafkaSource',
        metadata: { name: 'orders', namespace: ns },
        spec: {
          consumers: 2,
          bootstrapServers: ['kafka:9092'],
          topics: ['orders'],
          sink: { uri: 'http://sink.example/' }
        }
      }
    })
    await patchStatus('kafkasources', 'v1', ns, 'orders', { consumers: 2, selector: 'app=orders' })
    const scale = (await custom.getNamespacedCustomObjectScale({
      group: GROUP,
      version: 'v1',
      namespace: ns,
      plural: 'kafkasources',
      name: 'orders'
    })) as { spec?: { replicas?: number }; status?: { replicas?: number; selector?: string } }
    assert.deepEqual(
      { spec: scale.spec, status: scale.status },
      { spec: { replicas: 2 }, status: { replicas: 2, selector: 'app=orders' } }
    )
    // What `kubectl scale --replicas=3` sends.
    await custom.patchNamespacedCustomObjectScale(
      {
        group: GROUP,
        version: 'v1',
        namespace: ns,
        plural: 'kafkasources',
        name: 'orders',
        body: { spec: { replicas: 3 } }
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch)
    )
    const scaled = await read('kafkasources', 'v1beta1', ns, 'orders')
    assert.equal(scaled.spec['consumers'], 3)
    assert.deepEqual(scaled.spec['topics'], ['orders'])
  })
})

describe('the test API server restarted', () => {
  it('serves the custom resources etcd holds as soon as restart() resolves', async () => {
    const ns = await namespace()
    await custom.createNamespacedCustomObject({
      group: GROUP,
      version: 'v1',
      namespace: ns,
      plural: 'pingsources',
      body: pingSource(ns)
    })
    // Right after /readyz says ok, a list (served from the API server's watch cache) could be refused: 429, "storage
    // is (re)initializing". Seen in two restarts of three before restart() waited for it.
    for (const round of [1, 2, 3]) {
      await api.restart()
      assert.deepEqual(
        (await list('pingsources', 'v1beta2', ns)).map(s => [s.metadata?.name, s.status?.['observedGeneration']]),
        [['ping', round === 1 ? undefined : round - 1]]
      )
      await patchStatus('pingsources', 'v1', ns, 'ping', { observedGeneration: round })
    }
  })
})
