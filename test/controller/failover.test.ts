import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { startControllerProcess } from '../helpers/controllers.ts'
import { http } from '../helpers/http.ts'
import { uniqueName } from '../helpers/kafka.ts'
import { eventually } from '../helpers/wait.ts'

const KS = '/apis/sources.knative.dev/v1beta1/namespaces/default/kafkasources'
const source = (name: string) =>
  `apiVersion: sources.knative.dev/v1beta1\nkind: KafkaSource\nmetadata: {name: ${name}}\nspec:\n  bootstrapServers: [127.0.0.1:9092]\n  topics: [t]\n  sink: {uri: "http://127.0.0.1:9/"}\n`

describe('controller failover', () => {
  it('a SIGKILLed replica’s buckets move to the survivor, and writes keep working', async () => {
    const prefix = uniqueName('failover')
    const [a, b] = await Promise.all([startControllerProcess(prefix), startControllerProcess(prefix)])
    try {
      await eventually(
        async () =>
          (await http('GET', `${a.url}/internal/v1/controllers`)).body.replicas.length === 2 ? true : undefined,
        60_000,
        'two replicas in the group'
      )
      // Resources in every bucket, written through both replicas.
      const names = Array.from({ length: 8 }, (_, i) => `src-${i}`)
      for (const [i, name] of names.entries()) {
        const created = await http('POST', `${(i % 2 ? a : b).url}${KS}`, source(name))
        assert.equal(created.status, 201, JSON.stringify(created.body))
      }
      const versions = new Map<string, string>()
      for (const name of names)
        versions.set(name, (await http('GET', `${a.url}${KS}/${name}`)).body.metadata.resourceVersion)

      await b.stop('SIGKILL')
      const survivor = await eventually(
        async () => {
          const view = (await http('GET', `${a.url}/internal/v1/controllers`)).body
          return view.self.buckets.length === view.buckets ? view : undefined
        },
        60_000,
        'the survivor to own every bucket'
      )
      assert.equal(survivor.self.leader, true)

      // Every resource is still there, unchanged, and every bucket takes writes again.
      for (const name of names) {
        const got = await http('GET', `${a.url}${KS}/${name}`)
        assert.equal(got.body.metadata.resourceVersion, versions.get(name))
        const deleted = await http('DELETE', `${a.url}${KS}/${name}`)
        assert.equal(deleted.status, 200, JSON.stringify(deleted.body))
      }
      assert.equal((await http('GET', `${a.url}${KS}`)).body.items.length, 0)
    } finally {
      await Promise.all([a.stop(), b.stop()])
    }
  })

  it('a restarted controller serves the same resources with the same resourceVersions', async () => {
    const prefix = uniqueName('restart')
    const first = await startControllerProcess(prefix)
    const created = await http('POST', `${first.url}${KS}`, source('kept'))
    assert.equal(created.status, 201)
    await first.stop()
    const second = await startControllerProcess(prefix)
    try {
      const got = await http('GET', `${second.url}${KS}/kept`)
      assert.equal(got.status, 200)
      assert.equal(got.body.metadata.resourceVersion, created.body.metadata.resourceVersion)
      assert.equal(got.body.metadata.uid, created.body.metadata.uid)
      // Conditions move on as reconcilers observe things; what was stored stays.
      assert.equal(got.body.status.sinkUri, created.body.status.sinkUri)
      assert.equal(got.body.status.observedGeneration, created.body.status.observedGeneration)
      assert.deepEqual(got.body.spec, created.body.spec)
    } finally {
      await second.stop()
    }
  })
})
