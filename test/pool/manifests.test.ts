import assert from 'node:assert/strict'
import { readFile, readdir } from 'node:fs/promises'
import { describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { parseAllDocuments } from 'yaml'
import { parsePoolBounds, parseStatefulSetRef } from '../../src/pool/index.ts'

const dir = fileURLToPath(new URL('../../deploy/kubernetes/', import.meta.url))

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- Kubernetes objects under test
type K8s = any

async function objects(): Promise<K8s[]> {
  const out: K8s[] = []
  for (const file of (await readdir(dir)).filter(f => f.endsWith('.yaml')).sort()) {
    for (const doc of parseAllDocuments(await readFile(`${dir}${file}`, 'utf8'))) {
      assert.deepEqual(doc.errors, [], `${file}: ${doc.errors.join('; ')}`)
      const value = doc.toJS()
      if (value) out.push(value)
    }
  }
  return out
}

const find = (all: K8s[], kind: string, name: string, namespace?: string) =>
  all.find(
    o => o.kind === kind && o.metadata.name === name && (namespace === undefined || o.metadata.namespace === namespace)
  )

const flag = (args: string[], name: string) => args.find(a => a.startsWith(`--${name}=`))?.slice(name.length + 3)

// What `kubectl apply -f deploy/kubernetes/` needs to hang together for the pool: the controller names a
// StatefulSet that exists, may get and patch its scale, and the dispatchers learn id, node and zone from the
// downward API.
describe('deploy/kubernetes', () => {
  it('lets the controller scale the dispatcher StatefulSet it names', async () => {
    const all = await objects()
    const controller = find(all, 'Deployment', 'shoal-controller')
    assert.ok(controller, 'a controller Deployment')
    const container = controller.spec.template.spec.containers[0]
    assert.equal(container.args[0], 'controller')
    const bounds = parsePoolBounds(flag(container.args, 'dispatchers')!)
    assert.ok(bounds.min >= 1)
    const ref = parseStatefulSetRef(flag(container.args, 'statefulset')!)
    const statefulSet = find(all, 'StatefulSet', ref.name, ref.namespace)
    assert.ok(statefulSet, `the StatefulSet ${ref.namespace}/${ref.name} the controller scales`)
    assert.equal(statefulSet.spec.replicas, bounds.min, 'it starts at the pool minimum')

    // RBAC: the controller's service account may get and patch statefulsets/scale of that StatefulSet.
    const account = controller.spec.template.spec.serviceAccountName
    const binding = all.find(
      o =>
        o.kind === 'RoleBinding' &&
        o.metadata.namespace === ref.namespace &&
        o.subjects.some((s: K8s) => s.kind === 'ServiceAccount' && s.name === account)
    )
    assert.ok(binding, `a RoleBinding for ${account}`)
    const role = find(all, 'Role', binding.roleRef.name, ref.namespace)
    const rule = role.rules.find((r: K8s) => r.apiGroups.includes('apps') && r.resources.includes('statefulsets/scale'))
    assert.ok(rule, 'a rule on statefulsets/scale')
    assert.ok(rule.verbs.includes('get') && rule.verbs.includes('patch'))
    assert.ok(rule.resourceNames === undefined || rule.resourceNames.includes(ref.name))
  })

  it('gives each dispatcher its id, node and zone from the downward API, and a governing Service', async () => {
    const all = await objects()
    const statefulSet = all.find(o => o.kind === 'StatefulSet')
    const container = statefulSet.spec.template.spec.containers[0]
    assert.equal(container.args[0], 'dispatcher')
    const env = new Map(container.env.map((e: K8s) => [e.name, e.valueFrom?.fieldRef?.fieldPath]))
    assert.equal(env.get('POD_NAME'), 'metadata.name')
    assert.equal(env.get('NODE_NAME'), 'spec.nodeName')
    assert.equal(env.get('SHOAL_ZONE'), "metadata.labels['topology.kubernetes.io/zone']")
    const governing = find(all, 'Service', statefulSet.spec.serviceName, statefulSet.metadata.namespace)
    assert.ok(governing, 'the StatefulSet’s serviceName exists')
    assert.equal(governing.spec.clusterIP, 'None')
    // Every Service selects pods that some workload here runs.
    const podLabels = all
      .filter(o => o.kind === 'Deployment' || o.kind === 'StatefulSet')
      .map(o => o.spec.template.metadata.labels)
    for (const service of all.filter(o => o.kind === 'Service')) {
      const selector = Object.entries(service.spec.selector)
      assert.ok(
        podLabels.some(labels => selector.every(([k, v]) => labels[k] === v)),
        `Service ${service.metadata.name} selects no pods`
      )
    }
  })
})
