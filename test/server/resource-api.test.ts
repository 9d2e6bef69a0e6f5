import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { writeFile, mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { promisify } from 'node:util'
import * as examples from '../api/knative-examples.ts'
import { startControllerProcess } from '../helpers/controllers.ts'
import type { ControllerProcess } from '../helpers/controllers.ts'
import { http } from '../helpers/http.ts'
import { uniqueName } from '../helpers/kafka.ts'
import { shoalBin } from '../helpers/processes.ts'
import { eventually } from '../helpers/wait.ts'

const run = promisify(execFile)
const KS = '/apis/sources.knative.dev/v1beta1/namespaces/default/kafkasources'
const PS = '/apis/sources.knative.dev/v1/namespaces/default/pingsources'

function kafkaSource(name: string, extra = ''): string {
  return `apiVersion: sources.knative.dev/v1beta1
kind: KafkaSource
metadata:
  name: ${name}
${extra}spec:
  bootstrapServers: [127.0.0.1:9092]
  topics: [t1]
  sink:
    uri: http://127.0.0.1:9/sink
`
}

async function shoal(server: string, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [shoalBin, ...args, '--server', server])
    return { code: 0, stdout, stderr }
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string }
    return { code: e.code, stdout: e.stdout, stderr: e.stderr }
  }
}

describe('the resource API on two controllers over the Kafka log', () => {
  const prefix = uniqueName('ctl')
  let a: ControllerProcess
  let b: ControllerProcess

  before(async () => {
    ;[a, b] = await Promise.all([startControllerProcess(prefix), startControllerProcess(prefix)])
    // Both replicas have announced their buckets once the group settled.
    await eventually(
      async () => {
        const view = (await http('GET', `${a.url}/internal/v1/controllers`)).body
        return view.replicas.length === 2 ? true : undefined
      },
      60_000,
      'two replicas in the group'
    )
  })

  after(async () => {
    await Promise.all([a?.stop(), b?.stop()])
  })

  it('applies, gets, describes and deletes both kinds through the CLI', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'shoal-'))
    const file = join(dir, 'sources.yaml')
    await writeFile(
      file,
      `${kafkaSource('round-trip')}---\napiVersion: sources.knative.dev/v1\nkind: PingSource\nmetadata: {name: round-trip-ping}\nspec:\n  schedule: '*/1 * * * *'\n  data: hello\n  sink: {uri: 'http://127.0.0.1:9/ping'}\n`
    )
    const applied = await shoal(a.url, 'apply', '-f', file)
    assert.equal(applied.code, 0, applied.stderr)
    assert.match(applied.stdout, /kafkasource.sources.knative.dev\/round-trip created/)
    assert.match(applied.stdout, /pingsource.sources.knative.dev\/\S+ created/)

    const again = await shoal(b.url, 'apply', '-f', file)
    assert.match(again.stdout, /round-trip unchanged/)

    const got = await shoal(b.url, 'get', 'kafkasources', 'round-trip', '-o', 'json')
    const object = JSON.parse(got.stdout)
    assert.equal(object.metadata.name, 'round-trip')
    assert.equal(object.metadata.generation, 1)
    assert.equal(object.status.sinkUri, 'http://127.0.0.1:9/sink')
    const condition = (type: string) =>
      object.status.conditions.find((c: { type: string; status: string }) => c.type === type)?.status
    assert.equal(condition('SinkProvided'), 'True')
    // No dispatcher runs in this test: not yet scheduled, so not Ready either.
    assert.notEqual(condition('Scheduled'), 'True')
    assert.notEqual(condition('Ready'), 'True')

    const table = await shoal(a.url, 'get', 'pingsources')
    assert.match(table.stdout, /^NAME\s+SINK\s+SCHEDULE/m)

    const described = await shoal(a.url, 'describe', 'kafkasource', 'round-trip')
    assert.match(described.stdout, /Name:\s+round-trip/)
    assert.match(described.stdout, /SinkProvided/)

    const deleted = await shoal(b.url, 'delete', '-f', file)
    assert.equal(deleted.code, 0, deleted.stderr)
    assert.match(deleted.stdout, /"round-trip" deleted/)
    const gone = await http('GET', `${a.url}${KS}/round-trip`)
    assert.equal(gone.status, 404)
    assert.equal(gone.body.reason, 'NotFound')
  })

  it('serves a KafkaSource at v1beta1 and v1 and a PingSource at v1 and v1beta2: one object, every field kept', async () => {
    const V1 = KS.replace('/v1beta1/', '/v1/')
    const manifest = `apiVersion: sources.knative.dev/v1
kind: KafkaSource
metadata:
  name: versions
  labels: {versions-test: kept}
  annotations: {example.com/note: kept}
spec:
  bootstrapServers: [127.0.0.1:9092]
  topics: [t1, t2]
  consumerGroup: versions-group
  consumers: 3
  initialOffset: earliest
  ordering: unordered
  sink:
    uri: http://127.0.0.1:9/sink
  delivery: {retry: 4, backoffPolicy: linear, backoffDelay: PT0.5S, timeout: PT10S}
  ceOverrides:
    extensions: {extra: x}
`
    const created = await http('POST', `${a.url}${V1}`, manifest)
    assert.equal(created.status, 201, JSON.stringify(created.body))
    assert.equal(created.body.apiVersion, 'sources.knative.dev/v1', 'shown at the version it was sent to')
    const asBeta = await http('GET', `${b.url}${KS}/versions`)
    assert.equal(asBeta.status, 200)
    assert.equal(asBeta.body.apiVersion, 'sources.knative.dev/v1beta1')
    const asV1 = await http('GET', `${a.url}${V1}/versions`)
    const { apiVersion: _beta, status: _s1, ...betaRest } = asBeta.body
    const { apiVersion: _v1, status: _s2, ...v1Rest } = asV1.body
    assert.deepEqual(v1Rest, betaRest, 'the same object at either version')
    // Changed at v1beta1, read back at v1: the change and every other field are there.
    const changed = { ...asBeta.body, spec: { ...asBeta.body.spec, consumers: 5 } }
    delete changed.status
    const put = await http('PUT', `${b.url}${KS}/versions`, JSON.stringify(changed), 'application/json')
    assert.equal(put.status, 200, JSON.stringify(put.body))
    const after = await http('GET', `${a.url}${V1}/versions`)
    assert.equal(after.body.apiVersion, 'sources.knative.dev/v1')
    assert.deepEqual(after.body.spec, { ...asV1.body.spec, consumers: 5 })
    assert.deepEqual(after.body.metadata.labels, { 'versions-test': 'kept' })
    assert.deepEqual(after.body.metadata.annotations, asV1.body.metadata.annotations)
    // Lists at each version name it.
    const list = await http('GET', `${a.url}${V1}`)
    assert.equal(list.body.apiVersion, 'sources.knative.dev/v1')
    assert.ok(list.body.items.every((o: { apiVersion: string }) => o.apiVersion === 'sources.knative.dev/v1'))
    // A body at one version sent to the other's path is refused, naming both.
    const crossed = await http('POST', `${a.url}${KS}`, manifest.replace('name: versions', 'name: crossed'))
    assert.ok(crossed.status >= 400 && crossed.status < 500, JSON.stringify(crossed.body))
    assert.match(
      crossed.body.message,
      /the body is a sources\.knative\.dev\/v1 KafkaSource, the path names sources\.knative\.dev\/v1beta1/
    )
    // A field only Knative's v1 has, for AWS MSK IAM, is refused by name.
    const iam = manifest
      .replace('name: versions', 'name: iam')
      .replace('  sink:', '  net: {sasl: {enable: true, tokenProvider: {secretKeyRef: {name: s, key: k}}}}\n  sink:')
    const refused = await http('POST', `${a.url}${V1}`, iam)
    assert.ok(refused.status >= 400 && refused.status < 500, JSON.stringify(refused.body))
    assert.match(JSON.stringify(refused.body), /tokenProvider[^"]*"?[^"]*AWS MSK IAM/)
    // PingSource at v1beta2, read at v1.
    const ping = await http(
      'POST',
      `${a.url}${PS.replace('/v1/', '/v1beta2/')}`,
      `apiVersion: sources.knative.dev/v1beta2\nkind: PingSource\nmetadata: {name: versions}\nspec:\n  schedule: "*/2 * * * *"\n  contentType: application/json\n  data: '{"m": 1}'\n  sink: {uri: http://127.0.0.1:9/ping}\n`
    )
    assert.equal(ping.status, 201, JSON.stringify(ping.body))
    const pingV1 = await http('GET', `${b.url}${PS}/versions`)
    assert.equal(pingV1.body.apiVersion, 'sources.knative.dev/v1')
    assert.equal(pingV1.body.spec.data, '{"m": 1}')
    // shoal get names the version asked for.
    const got = await shoal(a.url, 'get', 'kafkasources.v1.sources.knative.dev', 'versions', '-o', 'yaml')
    assert.equal(got.code, 0, got.stderr)
    assert.match(got.stdout, /apiVersion: sources\.knative\.dev\/v1\n/)
    // and so does shoal describe.
    const described = await shoal(a.url, 'describe', 'kafkasources.v1.sources.knative.dev', 'versions')
    assert.equal(described.code, 0, described.stderr)
    assert.match(described.stdout, /^API Version:\s+sources\.knative\.dev\/v1$/m)
  })

  it('accepts the KafkaSource and PingSource examples of the Knative documentation unchanged', async () => {
    // Each at the version it is written for (the v1beta2 PingSource at v1beta2).
    const manifests = Object.entries(examples)
    assert.ok(manifests.length >= 2)
    const seen = new Set<string>()
    for (const [name, text] of manifests) {
      const kind = /kind:\s*(\w+)/.exec(text)![1]
      const namespace = /namespace:\s*(\S+)/.exec(text)?.[1] ?? 'default'
      const resource = /name:\s*(\S+)/.exec(text)![1]
      const version = /apiVersion:\s*sources\.knative\.dev\/(\w+)/.exec(text)![1]!
      const path = (kind === 'KafkaSource' ? KS : PS)
        .replace('/namespaces/default/', `/namespaces/${namespace}/`)
        .replace(/\/sources\.knative\.dev\/\w+\//, `/sources.knative.dev/${version}/`)
      const created = await http('POST', `${a.url}${path}`, text)
      // Several examples share a name; the later ones then exist already.
      const expected = seen.has(`${kind}/${namespace}/${resource}`) ? 409 : 201
      seen.add(`${kind}/${namespace}/${resource}`)
      assert.equal(created.status, expected, `${name}: ${JSON.stringify(created.body)}`)
    }
  })

  it('serves the same resources with the same resourceVersions from either replica', async () => {
    const created = await http('POST', `${a.url}${KS}`, kafkaSource('same-everywhere'))
    assert.equal(created.status, 201)
    // Replacing it with the same object changes nothing, not even its resourceVersion.
    const same = await http('PUT', `${b.url}${KS}/same-everywhere`, kafkaSource('same-everywhere'))
    assert.equal(same.status, 200)
    assert.equal(same.body.metadata.resourceVersion, created.body.metadata.resourceVersion)
    const fromB = await http('GET', `${b.url}${KS}/same-everywhere`)
    assert.equal(fromB.status, 200)
    assert.equal(fromB.body.metadata.resourceVersion, created.body.metadata.resourceVersion)
    assert.equal(fromB.body.metadata.uid, created.body.metadata.uid)
  })

  it('lets exactly one of many concurrent updates from the same resourceVersion win', async () => {
    const created = await http('POST', `${b.url}${KS}`, kafkaSource('contended'))
    const rv = created.body.metadata.resourceVersion as string
    const attempts = Array.from({ length: 8 }, (_, i) =>
      http(
        'PUT',
        `${(i % 2 === 0 ? a : b).url}${KS}/contended`,
        kafkaSource('contended', `  resourceVersion: "${rv}"\n  labels: {attempt: "a${i}"}\n`).replace(
          'topics: [t1]',
          `topics: [u${i}]`
        )
      )
    )
    const answers = await Promise.all(attempts)
    const statuses = answers.map(r => r.status).sort()
    assert.deepEqual(statuses, [200, 409, 409, 409, 409, 409, 409, 409])
    const winner = answers.find(r => r.status === 200)!
    const stored = await http('GET', `${a.url}${KS}/contended`)
    assert.equal(stored.body.metadata.resourceVersion, winner.body.metadata.resourceVersion)
    assert.deepEqual(stored.body.spec.topics, winner.body.spec.topics)
    assert.equal(stored.body.metadata.generation, 2)
    for (const loser of answers.filter(r => r.status === 409)) assert.equal(loser.body.reason, 'Conflict')
  })

  it('refuses bad manifests with a 4xx naming every offending field, and stores nothing', async () => {
    const before = (await http('GET', `${a.url}/apis/sources.knative.dev/v1/pingsources`)).body.items.length
    const cases: Array<{ body: string; status: number; fields?: string[]; contentType?: string }> = [
      {
        body: 'apiVersion: sources.knative.dev/v1\nkind: PingSource\nmetadata: {name: bad-1, extra: 1}\nspec:\n  schedule: "61 * * * *"\n  timezone: Mars/Olympus\n  data: x\n  dataBase64: eA==\n',
        status: 422,
        fields: ['metadata.extra', 'spec.schedule', 'spec.timezone', 'spec.data', 'spec.sink']
      },
      {
        body: 'apiVersion: sources.knative.dev/v1\nkind: PingSource\nmetadata: {name: bad-2}\nspec:\n  schedule: "*/5 * * * *"\n  sink: {uri: "http://x"}\n  contentType: 7\n',
        status: 422,
        fields: ['spec.contentType']
      },
      { body: 'apiVersion: sources.knative.dev/v1\nkind: PingSource\nmetadata: {name: [bad\n', status: 400 },
      {
        body: 'apiVersion: sources.knative.dev/v9\nkind: PingSource\nmetadata: {name: bad-3}\nspec: {}\n',
        status: 400
      },
      {
        body: `apiVersion: sources.knative.dev/v1\nkind: PingSource\nmetadata: {name: bad-4}\nspec:\n  schedule: "* * * * *"\n  sink: {uri: "http://x"}\n  data: "${'x'.repeat(1_100_000)}"\n`,
        status: 413
      }
    ]
    for (const c of cases) {
      const answer = await http('POST', `${a.url}${PS}`, c.body, c.contentType)
      assert.equal(answer.status, c.status, JSON.stringify(answer.body).slice(0, 500))
      assert.equal(answer.body.kind, 'Status')
      const causes = (answer.body.details?.causes ?? []).map((x: { field: string }) => x.field)
      for (const field of c.fields ?? []) assert.ok(causes.includes(field), `${field} missing from ${causes}`)
    }
    const badDelivery = await http(
      'POST',
      `${a.url}${KS}`,
      kafkaSource('bad-5').replace(
        'spec:\n',
        'spec:\n  delivery: {backoffDelay: "5 seconds", retry: -1}\n  consumers: "two"\n'
      )
    )
    assert.equal(badDelivery.status, 422)
    const fields = badDelivery.body.details.causes.map((x: { field: string }) => x.field)
    for (const f of ['spec.delivery.backoffDelay', 'spec.delivery.retry', 'spec.consumers'])
      assert.ok(fields.includes(f), `${f} in ${fields}`)
    const after = (await http('GET', `${a.url}/apis/sources.knative.dev/v1/pingsources`)).body.items.length
    assert.equal(after, before)
    assert.equal((await http('GET', `${a.url}${KS}/bad-5`)).status, 404)
  })

  it("defaults a KafkaSource's consumer group from its uid and keeps it immutable", async () => {
    const created = await http('POST', `${a.url}${KS}`, kafkaSource('grouped'))
    assert.equal(created.body.spec.consumerGroup, `knative-kafka-source-${created.body.metadata.uid}`)
    const omitted = await http(
      'PUT',
      `${b.url}${KS}/grouped`,
      kafkaSource('grouped').replace('topics: [t1]', 'topics: [t2]')
    )
    assert.equal(omitted.status, 200, JSON.stringify(omitted.body))
    assert.equal(omitted.body.spec.consumerGroup, created.body.spec.consumerGroup)
    assert.equal(omitted.body.metadata.generation, 2)
    const changed = await http(
      'PUT',
      `${a.url}${KS}/grouped`,
      kafkaSource('grouped').replace('spec:\n', 'spec:\n  consumerGroup: other\n')
    )
    assert.equal(changed.status, 422)
    assert.equal(changed.body.details.causes[0].field, 'spec.consumerGroup')
  })

  it('filters lists by label selector', async () => {
    await http('POST', `${a.url}${KS}`, kafkaSource('labelled-1', '  labels: {team: blue}\n'))
    await http('POST', `${b.url}${KS}`, kafkaSource('labelled-2', '  labels: {team: red}\n'))
    const blue = await http('GET', `${a.url}${KS}?labelSelector=team%3Dblue`)
    assert.deepEqual(
      blue.body.items.map((i: { metadata: { name: string } }) => i.metadata.name),
      ['labelled-1']
    )
    const notBlue = await http('GET', `${b.url}${KS}?labelSelector=team,team!%3Dblue`)
    assert.deepEqual(
      notBlue.body.items.map((i: { metadata: { name: string } }) => i.metadata.name),
      ['labelled-2']
    )
  })
})
