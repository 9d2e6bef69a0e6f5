import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { isMap, isScalar, parseAllDocuments } from 'yaml'
import type { Document } from 'yaml'
import { DEFAULT_BUCKETS, storeNames, storeTopics } from '../../src/store/index.ts'

// Every manifest under deploy/kubernetes/ decoded as the API server takes it with strict field validation
// (scripts/k8s-check.sh: tools/k8s-check, a Go program over k8s.io/api and the API server's own code for custom
// resources, Strimzi's CRDs generated from Strimzi's release), so a misspelt field fails the suite.

const root = fileURLToPath(new URL('../../', import.meta.url))
const deploy = join(root, 'deploy/kubernetes')

interface Run {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

function run(args: readonly string[]): Promise<Run> {
  return new Promise(resolve => {
    execFile('bash', ['scripts/k8s-check.sh', ...args], { cwd: root, maxBuffer: 16 << 20 }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === 'number' ? error.code : 1
      resolve({ code, stdout, stderr })
    })
  })
}

/** The checker's verdict per object: `FILE:LINE` → the line it printed. */
function verdicts(stdout: string): Map<string, { ok: boolean; text: string }> {
  const out = new Map<string, { ok: boolean; text: string }>()
  for (const line of stdout.split('\n')) {
    const m = /^(ok|FAIL) +(\S+:\d+) (.*)$/.exec(line)
    if (m) out.set(m[2]!, { ok: m[1] === 'ok', text: m[3]! })
  }
  return out
}

async function yamlFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true })
  return entries
    .filter(e => e.isFile() && /\.ya?ml$/.test(e.name))
    .map(e => join(e.parentPath, e.name))
    .sort()
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- Kubernetes objects under test
type K8s = any

interface Manifest {
  readonly file: string
  readonly doc: Document
  readonly value: K8s
}

async function manifests(): Promise<Manifest[]> {
  const out: Manifest[] = []
  for (const file of await yamlFiles(deploy)) {
    for (const doc of parseAllDocuments(await readFile(file, 'utf8'))) {
      assert.deepEqual(doc.errors, [], `${file}: ${doc.errors.join('; ')}`)
      const value = doc.toJS()
      if (value) out.push({ file, doc, value })
    }
  }
  return out
}

/** The 1-based line of a document's first content (what the checker reports), past comments and a `---`. */
function firstContentLine(text: string): number {
  const lines = text.split('\n')
  return lines.findIndex(l => l.trim() !== '' && !l.trim().startsWith('#') && !l.startsWith('---')) + 1
}

/** A plausible slip of the keyboard: the key's last two letters swapped (`replicas` → `replicsa`). */
const misspell = (key: string) => key.slice(0, -2) + key.at(-1) + key.at(-2)

describe('deploy/kubernetes, checked against the Kubernetes API types and the CRDs', () => {
  let scratch = ''

  before(
    async () => {
      scratch = await mkdtemp(join(tmpdir(), 'shoal-k8s-check-'))
      // Builds the checker and generates Strimzi's CRDs the first time (minutes); a no-op afterwards.
      const prepared = await run(['--prepare'])
      assert.equal(prepared.code, 0, `scripts/k8s-check.sh --prepare failed:\n${prepared.stdout}${prepared.stderr}`)
    },
    { timeout: 15 * 60_000 }
  )

  after(async () => {
    if (scratch) await rm(scratch, { recursive: true, force: true })
  })

  it('decodes every object strictly: built-in kinds as k8s.io/api types, Strimzi kinds against their CRDs', async () => {
    const result = await run(['deploy/kubernetes'])
    assert.equal(result.code, 0, result.stdout + result.stderr)
    const seen = verdicts(result.stdout)
    const all = await manifests()
    assert.equal(seen.size, all.length, `one verdict per object:\n${result.stdout}`)
    for (const { value } of all) {
      const line = [...seen.values()].find(
        v => v.text.includes(` ${value.kind} `) && v.text.includes(value.metadata.name)
      )
      assert.ok(line?.ok, `${value.kind} ${value.metadata.name} checked`)
      if (value.apiVersion.startsWith('kafka.strimzi.io/')) {
        assert.match(line.text, /CRD \w+\.kafka\.strimzi\.io v1: schema, CEL rules, strict$/)
      } else if (value.kind === 'CustomResourceDefinition') {
        // Knative's source CRDs of operator mode: as the API server's own CRD validation takes them.
        assert.match(line.text, /k8s\.io\/apiextensions-apiserver CRD validation, strict$/)
      } else {
        assert.match(line.text, /k8s\.io\/api\/[\w/]+\.\w+, strict$/)
      }
    }
    for (const kind of ['Kafka', 'KafkaNodePool', 'KafkaTopic']) {
      assert.ok(
        all.some(m => m.value.kind === kind),
        `the Strimzi example has a ${kind}`
      )
    }
  })

  it('refuses a copy of each manifest with a misspelt field, naming the field', async () => {
    const dir = join(scratch, 'misspelt')
    await mkdir(dir)
    const expected = new Map<string, string>()
    let n = 0
    for (const { file, doc, value } of await manifests()) {
      // The first key of spec (or of metadata, for objects without a spec), misspelt.
      const parent = value.spec && typeof value.spec === 'object' ? 'spec' : 'metadata'
      const copy = doc.clone()
      const map = copy.get(parent)
      assert.ok(isMap(map))
      const key = map.items[0]?.key
      assert.ok(isScalar(key) && typeof key.value === 'string')
      const misspelt = misspell(key.value)
      key.value = misspelt
      const name = `${String(++n).padStart(2, '0')}-${relative(deploy, file).replaceAll('/', '-')}`
      const text = copy.toString()
      await writeFile(join(dir, name), text)
      expected.set(`${join(dir, name)}:${firstContentLine(text)}`, `${parent}.${misspelt}`)
    }
    // The two slips the issue names: a misspelt field deep in a pod template, and one in a Strimzi resource.
    const controller = (await readFile(join(deploy, 'controller.yaml'), 'utf8')).replace(
      'readinessProbe:',
      'readinessprobe:'
    )
    await writeFile(join(dir, 'deep-controller.yaml'), controller)
    const kafka = (await readFile(join(deploy, 'strimzi/kafka.yaml'), 'utf8')).replace('topologyKey:', 'topologykey:')
    await writeFile(join(dir, 'deep-kafka.yaml'), kafka)

    const result = await run([dir])
    assert.equal(result.code, 1, result.stdout + result.stderr)
    const seen = verdicts(result.stdout)
    for (const [where, path] of expected) {
      const verdict = seen.get(where)
      assert.ok(verdict, `a verdict for ${where}:\n${result.stdout}`)
      assert.equal(verdict.ok, false, `${where} refused`)
      assert.ok(verdict.text.includes(`unknown field "${path}"`), `${where} names ${path}: ${verdict.text}`)
    }
    const deep = [...seen].filter(([where]) => where.includes('/deep-'))
    const text = (file: string) => deep.filter(([where]) => where.includes(file)).map(([, v]) => v)
    assert.ok(
      text('deep-controller.yaml').some(
        v => !v.ok && v.text.includes('unknown field "spec.template.spec.containers[0].readinessprobe"')
      ),
      result.stdout
    )
    assert.ok(
      text('deep-kafka.yaml').some(v => !v.ok && v.text.includes('unknown field "spec.kafka.rack.topologykey"')),
      result.stdout
    )
    // Only the misspelt objects fail: the rest of those two files still passes.
    assert.ok(text('deep-controller.yaml').some(v => v.ok && v.text.includes(' Service ')))
    assert.ok(text('deep-kafka.yaml').some(v => v.ok && v.text.includes(' KafkaNodePool ')))
  })

  it('refuses a misspelt kind or apiVersion, a wrong type and a value the CRD forbids', async () => {
    const dir = join(scratch, 'wrong')
    await mkdir(dir)
    const topics = await readFile(join(deploy, 'strimzi/topics.yaml'), 'utf8')
    const service = await readFile(join(deploy, 'controller.yaml'), 'utf8')
    await writeFile(join(dir, 'kind.yaml'), service.replace('kind: Deployment', 'kind: Deploymnet'))
    await writeFile(join(dir, 'version.yaml'), topics.replace('kafka.strimzi.io/v1', 'kafka.strimzi.io/v1beta3'))
    await writeFile(join(dir, 'type.yaml'), service.replace('replicas: 3', 'replicas: three'))
    await writeFile(join(dir, 'value.yaml'), topics.replace('replicas: 3', 'replicas: 0'))
    const result = await run([dir])
    assert.equal(result.code, 1)
    const failed = (file: string) =>
      [...verdicts(result.stdout)].filter(([where, v]) => where.includes(`/${file}:`) && !v.ok).map(([, v]) => v.text)
    assert.match(
      failed('kind.yaml')[0] ?? '',
      /no type and no CustomResourceDefinition known for apps\/v1, Kind=Deploymnet/
    )
    assert.match(
      failed('version.yaml')[0] ?? '',
      /no type and no CustomResourceDefinition known for kafka\.strimzi\.io\/v1beta3/
    )
    assert.match(
      failed('type.yaml')[0] ?? '',
      /cannot unmarshal string into Go struct field DeploymentSpec\.spec\.replicas of type int32/
    )
    assert.match(
      failed('value.yaml')[0] ?? '',
      /spec\.replicas: Invalid value: 0: spec\.replicas in body should be greater than or equal to 1/
    )
  })

  it('checks a CustomResourceDefinition as the API server does, and its custom resources against it', async () => {
    // Shoal keeps its own resources in Kafka and ships no CRD; one placed under deploy/ would be checked like this.
    const dir = join(scratch, 'crd')
    await mkdir(dir)
    const crd = (kind: string, served = 'served') => `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: ${kind.toLowerCase()}s.test.shoal.dev
spec:
  group: test.shoal.dev
  names: { kind: ${kind}, plural: ${kind.toLowerCase()}s, singular: ${kind.toLowerCase()}, listKind: ${kind}List }
  scope: Namespaced
  versions:
    - name: v1
      ${served}: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
                size: { type: integer, minimum: 1 }
`
    const widget = 'apiVersion: test.shoal.dev/v1\nkind: Widget\nmetadata: { name: w, namespace: default }\n'
    await writeFile(join(dir, 'a-crd.yaml'), crd('Widget'))
    await writeFile(join(dir, 'b-widget.yaml'), `${widget}spec: { size: 2 }\n`)
    await writeFile(join(dir, 'c-widget-misspelt.yaml'), `${widget}spec: { sise: 2 }\n`)
    await writeFile(join(dir, 'd-crd-misspelt.yaml'), crd('Gadget', 'servd'))
    const result = await run([dir])
    const seen = [...verdicts(result.stdout)]
    const verdict = (file: string) => seen.find(([where]) => where.includes(`/${file}:`))?.[1]
    assert.equal(verdict('a-crd.yaml')?.ok, true, result.stdout)
    assert.match(verdict('a-crd.yaml')!.text, /CRD validation, strict$/)
    assert.equal(verdict('b-widget.yaml')?.ok, true, result.stdout)
    assert.match(verdict('c-widget-misspelt.yaml')?.text ?? '', /unknown field "spec\.sise"/)
    assert.match(verdict('d-crd-misspelt.yaml')?.text ?? '', /unknown field "spec\.versions\[0\]\.servd"/)
  })

  it('creates Shoal’s internal topics as Shoal would: partitions, configs, replication 3, min ISR 2', async () => {
    const all = (await manifests()).filter(m => m.file.includes('/strimzi/')).map(m => m.value)
    const topics = all.filter(o => o.kind === 'KafkaTopic')
    const kafka = all.find(o => o.kind === 'Kafka')
    assert.ok(kafka)
    const wanted = storeTopics(storeNames(), DEFAULT_BUCKETS)
    assert.deepEqual(topics.map(t => t.spec.topicName ?? t.metadata.name).sort(), wanted.map(t => t.name).sort())
    for (const spec of wanted) {
      const topic = topics.find(t => (t.spec.topicName ?? t.metadata.name) === spec.name)
      assert.equal(topic.metadata.labels['strimzi.io/cluster'], kafka.metadata.name, `${spec.name}: its cluster`)
      assert.equal(topic.metadata.namespace, kafka.metadata.namespace)
      assert.equal(topic.spec.partitions, spec.partitions, `${spec.name}: partitions`)
      assert.equal(topic.spec.replicas, 3, `${spec.name}: replication 3`)
      const config = Object.fromEntries(Object.entries(topic.spec.config).map(([k, v]) => [k, String(v)]))
      assert.deepEqual(config, { ...spec.configs, 'min.insync.replicas': '2' }, `${spec.name}: configs`)
    }
  })

  it('has each controller listen on, and so announce, its pod’s address', async () => {
    // A replica announces the address it listens on, and the others forward writes for its buckets there: with
    // --host=0.0.0.0 each replica would forward to itself, and writes for the other replicas' buckets would fail.
    const controller = (await manifests())
      .map(m => m.value)
      .find(o => o.kind === 'Deployment' && o.metadata.name === 'shoal-controller')
    const container = controller.spec.template.spec.containers[0]
    assert.ok(container.args.includes('--host=$(POD_IP)'), container.args.join(' '))
    const podIp = container.env.find((e: K8s) => e.name === 'POD_IP')
    assert.equal(podIp?.valueFrom?.fieldRef?.fieldPath, 'status.podIP')
  })

  it('runs Kafka across three zones, rack-aware, where the Shoal workloads look for it', async () => {
    const all = (await manifests()).map(m => m.value)
    const kafka = all.find(o => o.kind === 'Kafka')
    assert.equal(kafka.spec.kafka.rack.topologyKey, 'topology.kubernetes.io/zone')
    const config = kafka.spec.kafka.config
    assert.equal(config['default.replication.factor'], 3)
    assert.equal(config['min.insync.replicas'], 2)
    assert.equal(config['transaction.state.log.min.isr'], 2)
    assert.ok(kafka.spec.entityOperator.topicOperator, 'the Topic Operator creates the KafkaTopics')
    const pools = all.filter(
      o => o.kind === 'KafkaNodePool' && o.metadata.labels['strimzi.io/cluster'] === kafka.metadata.name
    )
    const zonesOf = (role: string) =>
      pools
        .filter(p => p.spec.roles.includes(role))
        .flatMap(p =>
          p.spec.template.pod.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms.flatMap(
            (t: K8s) =>
              t.matchExpressions
                .filter((e: K8s) => e.key === 'topology.kubernetes.io/zone')
                .flatMap((e: K8s) => e.values)
          )
        )
    for (const role of ['controller', 'broker']) {
      assert.equal(new Set(zonesOf(role)).size, 3, `${role}s in three zones`)
      assert.equal(zonesOf(role).length, 3, `each ${role} pool pinned to one zone`)
    }
    // Strimzi names the bootstrap Service <cluster>-kafka-bootstrap; both workloads must point at its plain listener.
    const listener = kafka.spec.kafka.listeners.find((l: { tls: boolean }) => !l.tls)
    const bootstrap = `${kafka.metadata.name}-kafka-bootstrap.${kafka.metadata.namespace}.svc:${listener.port}`
    for (const workload of all.filter(o => o.kind === 'Deployment' || o.kind === 'StatefulSet')) {
      if (!workload.metadata.name.startsWith('shoal-')) continue
      const env = workload.spec.template.spec.containers[0].env
      const value = env.find((e: { name: string }) => e.name === 'KAFKA_BOOTSTRAP_SERVERS')?.value
      assert.equal(value, bootstrap, `${workload.metadata.name}'s KAFKA_BOOTSTRAP_SERVERS`)
    }
  })
})
