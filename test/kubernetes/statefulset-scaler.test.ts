import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { AppsV1Api, KubeConfig, KubernetesObjectApi, RbacAuthorizationV1Api } from '@kubernetes/client-node'
import { StatefulSetScaler } from '../../src/kubernetes/index.ts'
import { KS, kafkaSource } from '../autoscale/harness.ts'
import { startControllerProcess } from '../helpers/controllers.ts'
import { startDispatcherProcess } from '../helpers/dispatchers.ts'
import type { DispatcherProcess } from '../helpers/dispatchers.ts'
import { http } from '../helpers/http.ts'
import { createTopic, uniqueName } from '../helpers/kafka.ts'
import { startApiServer } from '../helpers/kube-apiserver.ts'
import type { ApiServer } from '../helpers/kube-apiserver.ts'
import { eventually } from '../helpers/wait.ts'
import { controllerKubeconfig, manifests } from './rig.ts'

// The pool's size written to the dispatcher StatefulSet of deploy/kubernetes/, on a real kube-apiserver, with the
// controller's service account and the RBAC deploy/kubernetes/rbac.yaml gives it — nothing more.

let api: ApiServer
let apps: AppsV1Api
let kubeconfig: string

async function replicas(): Promise<{ replicas: number | undefined; resourceVersion: string | undefined }> {
  const set = await apps.readNamespacedStatefulSet({ namespace: 'shoal', name: 'shoal-dispatcher' })
  return { replicas: set.spec?.replicas, resourceVersion: set.metadata?.resourceVersion }
}

before(async () => {
  api = await startApiServer()
  const admin = new KubeConfig()
  admin.loadFromFile(api.kubeconfig)
  const objects = KubernetesObjectApi.makeApiClient(admin)
  for (const file of ['namespace.yaml', 'rbac.yaml', 'dispatcher.yaml']) {
    for (const object of await manifests(`deploy/kubernetes/${file}`)) await objects.create(object)
  }
  apps = admin.makeApiClient(AppsV1Api)
  kubeconfig = await controllerKubeconfig(api)
})

after(async () => {
  await api?.stop()
})

describe('the StatefulSet scale writer on a real API server', () => {
  it('writes each new replicas once, as the service account may; a refusal names the StatefulSet and the reason', async () => {
    const config = new KubeConfig()
    config.loadFromFile(kubeconfig)
    const scaler = new StatefulSetScaler(config, { namespace: 'shoal', name: 'shoal-dispatcher' })
    try {
      await scaler.apply(4)
      const four = await replicas()
      assert.equal(four.replicas, 4)
      // The same decision again is not written again; a new one is.
      await scaler.apply(4)
      assert.equal((await replicas()).resourceVersion, four.resourceVersion)
      await scaler.apply(2)
      assert.equal((await replicas()).replicas, 2)
      // Without the RoleBinding the account may not scale it: refused, and the API's reason says so.
      const admin = new KubeConfig()
      admin.loadFromFile(api.kubeconfig)
      await admin
        .makeApiClient(RbacAuthorizationV1Api)
        .deleteNamespacedRoleBinding({ namespace: 'shoal', name: 'shoal-controller-scales-dispatchers' })
      await assert.rejects(
        scaler.apply(3),
        /refused to scale statefulset shoal\/shoal-dispatcher to 3: 403 .*forbidden/
      )
      assert.equal((await replicas()).replicas, 2)
    } finally {
      await scaler.close()
    }
  })

  it("gets the leader's pool decision from a controller started with --dispatchers and --statefulset", async () => {
    // The binding the previous test removed, back.
    const admin = new KubeConfig()
    admin.loadFromFile(api.kubeconfig)
    const binding = (await manifests('deploy/kubernetes/rbac.yaml')).find(
      o => o.kind === 'RoleBinding' && o.metadata?.name === 'shoal-controller-scales-dispatchers'
    )!
    await KubernetesObjectApi.makeApiClient(admin)
      .create(binding)
      .catch(() => undefined)
    const controller = await startControllerProcess(uniqueName('scaler'), [
      '--dispatchers',
      '3..5',
      '--statefulset',
      'shoal/shoal-dispatcher',
      '--kubeconfig',
      kubeconfig
    ])
    try {
      // No dispatcher and no load: the pool is its minimum, written to the StatefulSet by the leader.
      await eventually(async () => (await replicas()).replicas === 3, 60_000, 'replicas 3 (the pool minimum)')
    } finally {
      await controller.stop()
    }
  })

  it('grows the StatefulSet to what the load needs and never shrinks it below a dispatcher that still holds vreplicas', async () => {
    const prefix = uniqueName('scaler-load')
    const controller = await startControllerProcess(prefix, [
      ...['--dispatchers', '1..5', '--pool-stabilization', '1s', '--liveness-timeout', '3s'],
      ...['--statefulset', 'shoal/shoal-dispatcher', '--kubeconfig', kubeconfig]
    ])
    const dispatchers: DispatcherProcess[] = []
    try {
      // Four dispatchers of one slot each, as the StatefulSet's pods would be: ordinals 0 … 3.
      for (let i = 0; i < 4; i++) {
        dispatchers.push(
          await startDispatcherProcess(prefix, `dispatcher-${i}`, 'a', `node-${i}`, 1, ['--liveness-timeout', '3s'])
        )
      }
      const topic = uniqueName('scaler-topic')
      await createTopic(topic, { partitions: 4 })
      const manifest = (consumers: number) => kafkaSource('wide', topic, 'http://127.0.0.1:9/', { consumers })
      const created = await http('POST', `${controller.url}${KS}`, manifest(4))
      assert.equal(created.status, 201, JSON.stringify(created.body))
      await eventually(async () => (await replicas()).replicas === 4, 60_000, 'replicas 4: one slot on each')

      // Down to one consumer: the pool shrinks, but while a dispatcher holds a vreplica its ordinal stays.
      const replaced = await http('PUT', `${controller.url}${KS}/wide`, manifest(1))
      assert.equal(replaced.status, 200, JSON.stringify(replaced.body))
      const highestBusy = async () => {
        const source = (await http('GET', `${controller.url}${KS}/wide`)).body as {
          status?: { placements?: { podName: string; vreplicas: number }[] }
        }
        const busy = (source.status?.placements ?? []).filter(p => p.vreplicas > 0)
        return Math.max(-1, ...busy.map(p => Number(p.podName.split('-').at(-1))))
      }
      const cuts: string[] = []
      await eventually(
        async () => {
          // Read the placements before the replicas: a StatefulSet never cut below what was placed a moment before.
          const busy = await highestBusy()
          const now = (await replicas()).replicas ?? 0
          if (now < busy + 1) cuts.push(`replicas ${now} with dispatcher-${busy} still holding vreplicas`)
          return now === 1 && busy === 0
        },
        90_000,
        'replicas 1, the one vreplica on dispatcher-0'
      )
      assert.deepEqual(cuts, [])
    } finally {
      await Promise.all(dispatchers.map(d => d.stop()))
      await controller.stop()
    }
  })
})
