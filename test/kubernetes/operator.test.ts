import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import {
  AuthenticationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  KubernetesObjectApi,
  PatchStrategy,
  setHeaderOptions
} from '@kubernetes/client-node'
import type { KubernetesObject } from '@kubernetes/client-node'
import { Agent, request } from 'undici'
import { RecordingProducer } from '../autoscale/harness.ts'
import { replicas } from '../helpers/controllers.ts'
import { http } from '../helpers/http.ts'
import { brokers, createTopic, uniqueName } from '../helpers/kafka.ts'
import { startApiServer } from '../helpers/kube-apiserver.ts'
import type { ApiServer } from '../helpers/kube-apiserver.ts'
import { eventually } from '../helpers/wait.ts'
import { manifests, startOperatorRig } from './rig.ts'
import type { OperatorRig } from './rig.ts'

// Shoal as a Kubernetes operator, against a real kube-apiserver and etcd (test/helpers/kube-apiserver.ts): Knative's
// manifests applied through the Kubernetes API with its own client, the controller running with the RBAC of
// deploy/kubernetes/rbac.yaml (a service account token, nothing more), events at a sink served here.

const GROUP = 'sources.knative.dev'

let api: ApiServer
let rig: OperatorRig
let objects: KubernetesObjectApi
let custom: CustomObjectsApi
let core: CoreV1Api
let sinkUrl: string
const at = (path: string) => rig.at(path)
const producer = new RecordingProducer()

async function apply(object: KubernetesObject): Promise<void> {
  await objects.create(object)
}

/** A source as a user writes it: sent as it is (the client's typed serializer knows nothing of Knative's kinds). */
async function applySource(source: Source): Promise<void> {
  const [group, version] = source.apiVersion!.split('/') as [string, string]
  await custom.createNamespacedCustomObject({
    group,
    version,
    namespace: source.metadata!.namespace!,
    plural: `${source.kind!.toLowerCase()}s`,
    body: source
  })
}

/** A namespace for one test; `claimed` labels it for Shoal. */
async function namespace(claimed: boolean): Promise<string> {
  const name = uniqueName('ns')
    .toLowerCase()
    .replace(/[^a-z0-9-]/g, '-')
    .slice(0, 50)
  await core.createNamespace({
    body: {
      metadata: { name, ...(claimed ? { labels: { 'sources.shoal.dev/controller': 'shoal' } } : {}) }
    }
  })
  return name
}

type Source = KubernetesObject & {
  spec: Record<string, unknown>
  status?: {
    observedGeneration?: number
    consumers?: number
    sinkUri?: string
    conditions?: { type: string; status: string; reason?: string; message?: string }[]
  }
}

async function read(plural: string, version: string, ns: string, name: string): Promise<Source> {
  return (await custom.getNamespacedCustomObject({ group: GROUP, version, namespace: ns, plural, name })) as Source
}

/** A merge patch of the test's PingSource's spec, as `kubectl patch --type merge` sends it. */
async function patchPingSource(ns: string, spec: Record<string, unknown>): Promise<void> {
  await custom.patchNamespacedCustomObject(
    { group: GROUP, version: 'v1', namespace: ns, plural: 'pingsources', name: 'test-ping-source', body: { spec } },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch)
  )
}

function ready(source: Source): string | undefined {
  return source.status?.conditions?.find(c => c.type === 'Ready')?.status
}

before(async () => {
  api = await startApiServer()
  const admin = new KubeConfig()
  admin.loadFromFile(api.kubeconfig)
  objects = KubernetesObjectApi.makeApiClient(admin)
  custom = admin.makeApiClient(CustomObjectsApi)
  core = admin.makeApiClient(CoreV1Api)
  rig = await startOperatorRig(api)
  sinkUrl = rig.sinkUrl
})

after(async () => {
  await producer.close()
  await rig?.stop()
  await api?.stop()
})

/** A CRD for Knative's Broker, made from the PingSource one: only its names and an open schema matter here. */
function addressableCrd(template: KubernetesObject): KubernetesObject {
  const crd = JSON.parse(JSON.stringify(template)) as {
    metadata: { name: string; labels?: unknown }
    spec: { group: string; names: Record<string, unknown>; versions: { name: string; storage: boolean }[] }
  }
  crd.metadata = { name: 'brokers.eventing.knative.dev' }
  crd.spec.group = 'eventing.knative.dev'
  crd.spec.names = { kind: 'Broker', plural: 'brokers', singular: 'broker' }
  crd.spec.versions = crd.spec.versions.filter(v => v.name === 'v1')
  return crd as unknown as KubernetesObject
}

/** Knative's docs PingSource (knative.dev, "Creating a PingSource object"), as it is. */
const docsPingSource = (ns: string): Source => ({
  apiVersion: `${GROUP}/v1`,
  kind: 'PingSource',
  metadata: { name: 'test-ping-source', namespace: ns },
  spec: {
    schedule: '*/1 * * * *',
    contentType: 'application/json',
    data: '{"message": "Hello world!"}',
    sink: { ref: { apiVersion: 'serving.knative.dev/v1', kind: 'Service', name: 'event-display' } }
  }
})

/** Knative's docs KafkaSource (knative.dev, "Apache Kafka source"), its brokers and topic the test's own. */
const docsKafkaSource = (ns: string, name: string, topic: string, sinkName: string): Source => ({
  apiVersion: `${GROUP}/v1beta1`,
  kind: 'KafkaSource',
  metadata: { name, namespace: ns },
  spec: {
    consumerGroup: `knative-group-${name}-${ns}`,
    bootstrapServers: brokers(),
    topics: [topic],
    sink: { ref: { apiVersion: 'serving.knative.dev/v1', kind: 'Service', name: sinkName } }
  }
})

describe('Shoal as a Kubernetes operator', { timeout: 600_000 }, () => {
  it("runs Knative's docs PingSource applied through the Kubernetes API: events at the sink, Ready, a spec change followed", async () => {
    const ns = await namespace(true)
    await applySource(docsPingSource(ns))
    const path = `/${ns}/event-display`
    // Every minute, as the manifest says.
    await eventually(() => at(path).length > 0, 90_000, `a tick at ${path}`)
    assert.deepEqual(JSON.parse(at(path)[0]!.data), { message: 'Hello world!' })
    assert.equal(at(path)[0]!.source, `/apis/v1/namespaces/${ns}/pingsources/test-ping-source`)
    const shown = await eventually(
      async () => {
        const source = await read('pingsources', 'v1', ns, 'test-ping-source')
        return ready(source) === 'True' && source.status?.observedGeneration === 1 ? source : undefined
      },
      30_000,
      'Ready True at generation 1'
    )
    assert.equal(shown.status?.sinkUri, `${sinkUrl}/${ns}/event-display`)
    assert.deepEqual(shown.metadata?.finalizers, ['sources.shoal.dev/delivery'])
    // The same object at the other served version.
    assert.equal(ready(await read('pingsources', 'v1beta2', ns, 'test-ping-source')), 'True')
    // What `kubectl get pingsources` prints: the API server's table, with Knative's columns.
    const table = await request(`${api.url}/apis/${GROUP}/v1/namespaces/${ns}/pingsources`, {
      headers: {
        authorization: `Bearer ${api.adminToken}`,
        accept: 'application/json;as=Table;v=v1;g=meta.k8s.io'
      },
      dispatcher: new Agent({ connect: { ca: api.caCert } })
    })
    const { columnDefinitions, rows } = (await table.body.json()) as {
      columnDefinitions: { name: string }[]
      rows: { cells: unknown[] }[]
    }
    const row = Object.fromEntries(columnDefinitions.map((c, i) => [c.name, rows[0]?.cells[i]]))
    assert.equal(row['Name'], 'test-ping-source')
    assert.equal(row['Ready'], 'True')
    assert.equal(row['Sink'], `${sinkUrl}/${ns}/event-display`)

    await patchPingSource(ns, { schedule: '* * * * * *', data: '{"message": "changed"}' })
    await eventually(() => at(path).some(a => a.data.includes('changed')), 30_000, 'a tick with the new data')
    await eventually(
      async () => (await read('pingsources', 'v1', ns, 'test-ping-source')).status?.observedGeneration === 2,
      30_000,
      'generation 2 observed'
    )
  })

  it("runs Knative's docs KafkaSource: each record once, `kubectl scale` followed, and after the delete completes no dispatcher delivers for it", async () => {
    const ns = await namespace(true)
    const topic = uniqueName('k8s-topic')
    await createTopic(topic, { partitions: 2 })
    await applySource(docsKafkaSource(ns, 'kafka-source', topic, 'event-display'))
    // A second source on the topic: the witness that records produced later were there to deliver.
    await applySource(docsKafkaSource(ns, 'witness', topic, 'witness-display'))
    for (const name of ['kafka-source', 'witness']) {
      await eventually(
        async () => ready(await read('kafkasources', 'v1beta1', ns, name)) === 'True',
        90_000,
        `${name} Ready`
      )
    }
    const first = await producer.produce(topic, 2, 20)
    const ids = (path: string) => new Set(at(path).map(a => a.id))
    await eventually(() => first.every(id => ids(`/${ns}/event-display`).has(id)), 60_000, 'the first records')
    assert.equal(at(`/${ns}/event-display`).length, 20, 'each record once')

    // `kubectl scale kafkasource kafka-source --replicas=2`: the scale subresource.
    await custom.patchNamespacedCustomObjectScale(
      {
        group: GROUP,
        version: 'v1',
        namespace: ns,
        plural: 'kafkasources',
        name: 'kafka-source',
        body: { spec: { replicas: 2 } }
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch)
    )
    await eventually(
      async () => {
        const source = await read('kafkasources', 'v1', ns, 'kafka-source')
        return source.status?.consumers === 2 && source.status.observedGeneration === 2 && ready(source) === 'True'
      },
      60_000,
      'two consumers, generation 2, Ready'
    )
    // What an HPA or KEDA reads through the scale subresource: replicas, and the pods that run them.
    const scale = await custom.getNamespacedCustomObjectScale({
      group: GROUP,
      version: 'v1',
      namespace: ns,
      plural: 'kafkasources',
      name: 'kafka-source'
    })
    assert.deepEqual((scale as { status?: unknown }).status, {
      replicas: 2,
      selector: 'app.kubernetes.io/name=shoal-dispatcher'
    })

    await objects.delete({
      apiVersion: `${GROUP}/v1beta1`,
      kind: 'KafkaSource',
      metadata: { name: 'kafka-source', namespace: ns }
    })
    await eventually(
      async () => {
        try {
          await read('kafkasources', 'v1beta1', ns, 'kafka-source')
          return false
        } catch (error) {
          return (error as { code?: number }).code === 404
        }
      },
      60_000,
      'the object gone (its finalizer removed)'
    )
    const before = at(`/${ns}/event-display`).length
    const later = await producer.produce(topic, 2, 20)
    await eventually(
      () => later.every(id => ids(`/${ns}/witness-display`).has(id)),
      60_000,
      'the witness delivering later records'
    )
    assert.equal(at(`/${ns}/event-display`).length, before, 'nothing delivered for the deleted source')
  })

  it('leaves a source in an unclaimed namespace alone, and says why it refuses a bad spec, as status and an Event', async () => {
    const unclaimed = await namespace(false)
    await applySource(docsPingSource(unclaimed))
    const ns = await namespace(true)
    const bad = docsPingSource(ns)
    await applySource({
      ...bad,
      metadata: { ...bad.metadata, name: 'bad' },
      spec: { ...bad.spec, schedule: 'every minute' }
    })
    const refused = await eventually(
      async () => {
        const source = await read('pingsources', 'v1', ns, 'bad')
        return ready(source) === 'False' ? source : undefined
      },
      60_000,
      'the bad source refused'
    )
    const condition = refused.status?.conditions?.find(c => c.type === 'Ready')
    assert.match(condition?.message ?? '', /schedule/)
    const events = await eventually(
      async () => {
        const list = await core.listNamespacedEvent({ namespace: ns })
        return list.items.filter(e => e.involvedObject.name === 'bad' && e.type === 'Warning').length > 0
          ? list
          : undefined
      },
      30_000,
      'a Warning Event for it'
    )
    assert.match(events.items.find(e => e.involvedObject.name === 'bad')?.message ?? '', /schedule/)
    // By now the operator has looked at every source at least once: the unclaimed one has neither finalizer nor status.
    const untouched = await read('pingsources', 'v1', unclaimed, 'test-ping-source')
    assert.equal(untouched.metadata?.finalizers, undefined)
    assert.equal(untouched.status?.conditions, undefined)
  })

  it('follows a change made while the API server was down, once it is back', async () => {
    const ns = await namespace(true)
    const source = docsPingSource(ns)
    await applySource({ ...source, spec: { ...source.spec, schedule: '* * * * * *' } })
    const path = `/${ns}/event-display`
    await eventually(() => at(path).length > 0, 60_000, 'ticks')
    await api.restart()
    await patchPingSource(ns, { data: '{"message": "after the restart"}' })
    await eventually(() => at(path).some(a => a.data.includes('after the restart')), 60_000, 'ticks with the new data')
  })

  it('follows a change made after its watches were dropped mid-way, the API server staying up', async () => {
    const ns = await namespace(true)
    const source = docsPingSource(ns)
    await applySource({ ...source, spec: { ...source.spec, schedule: '* * * * * *' } })
    const path = `/${ns}/event-display`
    await eventually(() => at(path).length > 0, 60_000, 'ticks')
    assert.ok(rig.cutApiConnections() > 0, 'no connection to the API server was open')
    await patchPingSource(ns, { data: '{"message": "after the cut"}' })
    await eventually(() => at(path).some(a => a.data.includes('after the cut')), 60_000, 'ticks with the new data')
  })

  it('resolves a sink ref to any Addressable by its status.address.url, and follows the URL when it changes', async () => {
    // A Knative Broker as the API server holds it: only its CRD, and a status the test writes.
    await apply((await manifests('deploy/kubernetes/crds/pingsources.yaml')).map(crd => addressableCrd(crd))[0]!)
    const ns = await namespace(true)
    await api.customResourcesServed()
    await custom.createNamespacedCustomObject({
      group: 'eventing.knative.dev',
      version: 'v1',
      namespace: ns,
      plural: 'brokers',
      body: { apiVersion: 'eventing.knative.dev/v1', kind: 'Broker', metadata: { name: 'default' }, spec: {} }
    })
    const address = (path: string) =>
      custom.patchNamespacedCustomObjectStatus(
        {
          group: 'eventing.knative.dev',
          version: 'v1',
          namespace: ns,
          plural: 'brokers',
          name: 'default',
          body: { status: { address: { url: `${sinkUrl}${path}` } } }
        },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch)
      )
    await address(`/${ns}/broker-a`)
    const source = docsPingSource(ns)
    await applySource({
      ...source,
      spec: {
        ...source.spec,
        schedule: '* * * * * *',
        sink: { ref: { apiVersion: 'eventing.knative.dev/v1', kind: 'Broker', name: 'default' } }
      }
    })
    await eventually(() => at(`/${ns}/broker-a`).length > 0, 60_000, 'ticks at the address')
    const shown = await read('pingsources', 'v1', ns, 'test-ping-source')
    assert.equal(shown.status?.sinkUri, `${sinkUrl}/${ns}/broker-a`)
    await address(`/${ns}/broker-b`)
    await eventually(() => at(`/${ns}/broker-b`).length > 0, 60_000, 'ticks at the new address')
  })

  it("copies the Kubernetes Secrets a source's spec.net names into Shoal, and again when one is rotated", async () => {
    const ns = await namespace(true)
    await core.createNamespacedSecret({
      namespace: ns,
      body: { metadata: { name: 'kafka-tls' }, stringData: { 'ca.crt': 'first' } }
    })
    const source = docsKafkaSource(ns, 'tls-source', uniqueName('tls-topic'), 'event-display')
    await applySource({
      ...source,
      spec: {
        ...source.spec,
        net: { tls: { enable: true, caCert: { secretKeyRef: { name: 'kafka-tls', key: 'ca.crt' } } } }
      }
    })
    const keysInShoal = async () => {
      const answer = await http('GET', `${rig.controllers[0]!.url}/api/v1/namespaces/${ns}/secrets/kafka-tls`)
      return answer.status === 200 ? ((answer.body as { keys?: string[] }).keys ?? []) : undefined
    }
    await eventually(async () => (await keysInShoal())?.includes('ca.crt'), 60_000, 'the Secret in Shoal')
    await core.patchNamespacedSecret(
      { namespace: ns, name: 'kafka-tls', body: { stringData: { 'ca.crt': 'second', 'tls.crt': 'new' } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch)
    )
    await eventually(async () => (await keysInShoal())?.includes('tls.crt'), 60_000, 'the rotated Secret in Shoal')
  })

  it("presents a token of the source's own ServiceAccount for its sink's OIDC audience, as Knative does", async () => {
    const ns = await namespace(true)
    const audience = `https://event-display.${ns}.example/oidc`
    const source = docsPingSource(ns)
    const spec: Record<string, unknown> = { ...source.spec, schedule: '* * * * * *' }
    await applySource({ ...source, spec: { ...spec, sink: { ...(spec['sink'] as object), audience } } })
    const path = `/${ns}/event-display`
    await eventually(() => at(path).length > 0, 60_000, 'ticks').catch(async (error: unknown) => {
      const status = (await read('pingsources', 'v1', ns, 'test-ping-source')).status
      throw new Error(`${String(error)}; status ${JSON.stringify(status)}`)
    })
    const authorization = at(path)[0]!.authorization ?? ''
    assert.match(authorization, /^Bearer [\w-]+\.[\w-]+\.[\w-]+$/)
    const token = authorization.slice('Bearer '.length)
    // The API server itself says whose token it is and for which audience (the check a Knative sink makes).
    const admin = new KubeConfig()
    admin.loadFromFile(api.kubeconfig)
    const reviews = admin.makeApiClient(AuthenticationV1Api)
    const review = await reviews.createTokenReview({ body: { spec: { token, audiences: [audience] } } })
    const account = 'test-ping-source-oidc-sources.knative.dev-pingsource'
    assert.equal(review.status?.authenticated, true, review.status?.error)
    assert.equal(review.status?.user?.username, `system:serviceaccount:${ns}:${account}`)
    const elsewhere = await reviews.createTokenReview({
      body: { spec: { token, audiences: ['https://other.example'] } }
    })
    assert.notEqual(elsewhere.status?.authenticated, true)
    // The ServiceAccount is the source's (deleted with it), and the status says what Knative's does.
    const shown = await read('pingsources', 'v1', ns, 'test-ping-source')
    const owner = (await core.readNamespacedServiceAccount({ namespace: ns, name: account })).metadata?.ownerReferences
    assert.deepEqual(
      owner?.map(o => [o.kind, o.name, o.uid, o.controller]),
      [['PingSource', 'test-ping-source', shown.metadata?.uid, true]]
    )
    const status = await eventually(
      async () => {
        const s = (await read('pingsources', 'v1', ns, 'test-ping-source')).status as
          (Source['status'] & { sinkAudience?: string; auth?: { serviceAccountName?: string } }) | undefined
        return s?.sinkAudience === undefined || s.conditions?.find(c => c.type === 'Ready')?.status !== 'True'
          ? undefined
          : s
      },
      30_000,
      'sinkAudience in the status, and Ready'
    )
    assert.equal(status.sinkAudience, audience)
    assert.equal(status.auth?.serviceAccountName, account)
    assert.equal(status.conditions?.find(c => c.type === 'OIDCIdentityCreated')?.status, 'True')

    // A ServiceAccount of that name that is not the source's is not used: the status says so.
    const other = await namespace(true)
    await core.createNamespacedServiceAccount({ namespace: other, body: { metadata: { name: account } } })
    await applySource({
      ...source,
      metadata: { ...source.metadata, namespace: other },
      spec: { ...spec, sink: { ...(spec['sink'] as object), audience } }
    })
    const refused = await eventually(
      async () => {
        const s = (await read('pingsources', 'v1', other, 'test-ping-source')).status
        return s?.conditions?.find(c => c.type === 'OIDCIdentityCreated')?.status === 'False' ? s : undefined
      },
      60_000,
      'OIDCIdentityCreated False'
    )
    assert.match(refused.conditions?.find(c => c.type === 'OIDCIdentityCreated')?.message ?? '', /not controlled by/)
    assert.equal(refused.conditions?.find(c => c.type === 'Ready')?.status, 'False')
    assert.equal(at(`/${other}/event-display`).length, 0)
  })

  it('goes on with a second controller when the leading one is killed', async () => {
    await rig.addController()
    const ns = await namespace(true)
    const source = docsPingSource(ns)
    await applySource({ ...source, spec: { ...source.spec, schedule: '* * * * * *' } })
    const path = `/${ns}/event-display`
    await eventually(() => at(path).length > 0, 60_000, 'ticks')
    const leader = await eventually(
      async () => (await replicas(rig.controllers[0]!.url)).find(r => r.leader),
      30_000,
      'a leader'
    )
    const victim = rig.controllers.find(c => c.url === leader.url)!
    await victim.stop('SIGKILL')
    await patchPingSource(ns, { data: '{"message": "after the failover"}' })
    await eventually(() => at(path).some(a => a.data.includes('after the failover')), 90_000, 'ticks with the new data')
    await eventually(
      async () => (await read('pingsources', 'v1', ns, 'test-ping-source')).status?.observedGeneration === 2,
      60_000,
      'generation 2 observed by the new leader'
    )
  })
})
