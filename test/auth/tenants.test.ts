import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { startControllerProcess } from '../helpers/controllers.ts'
import type { ControllerProcess } from '../helpers/controllers.ts'
import { uniqueName } from '../helpers/kafka.ts'
import { eventually } from '../helpers/wait.ts'
import { call, kafkaSource, ksPath, storeEnd, tokens, writeTokensFile } from './helpers.ts'

// Two controller replicas in multi-tenant mode over the real Kafka: team-a must be refused on every verb
// against team-b's namespace, Shoal's machinery and internal topics and groups, while forwarded writes between
// the replicas keep working and an admin can do everything.

const directory = mkdtempSync(join(tmpdir(), 'shoal-tenants-'))
const prefix = uniqueName('tenants')
let one: ControllerProcess
let two: ControllerProcess

before(async () => {
  const file = writeTokensFile(directory)
  one = await startControllerProcess(prefix, ['--tokens', file])
  two = await startControllerProcess(prefix, ['--tokens', file])
  // Both replicas are members of the group and own buckets, so some writes are forwarded.
  await eventually(
    async () => {
      const answer = await call('GET', `${one.url}/internal/v1/controllers`, tokens.admin)
      return answer.status === 200 && answer.body.replicas.length === 2 ? true : undefined
    },
    60_000,
    'two controllers'
  )
})

after(async () => {
  await Promise.all([one?.stop(), two?.stop()])
  rmSync(directory, { recursive: true, force: true })
})

describe('multi-tenant API', () => {
  it('answers 401 without a token or with an unknown one, and serves health checks without one', async () => {
    for (const token of [undefined, 'not-a-token-0123456789']) {
      const answer = await call('GET', ksPath(one.url, 'team-a'), token)
      assert.equal(answer.status, 401)
      assert.equal(answer.body.reason, 'Unauthorized')
      assert.equal(answer.headers.get('www-authenticate'), 'Bearer realm="shoal"')
    }
    assert.equal((await call('GET', `${one.url}/healthz`, undefined)).status, 200)
    assert.equal((await call('GET', `${one.url}/readyz`, undefined)).status, 200)
    assert.equal((await call('GET', `${one.url}/metrics`, undefined)).status, 401)
  })

  it("refuses team-a every verb on team-b's sources with 403, whether the source exists or not, and changes nothing", async () => {
    const created = await call('POST', ksPath(one.url, 'team-b'), tokens.teamB, kafkaSource('team-b', 'orders'))
    assert.equal(created.status, 201, JSON.stringify(created.body))
    const end = await storeEnd(prefix)
    const existing = created.body
    const attempts: Array<[string, string, unknown]> = [
      ['GET', ksPath(one.url, 'team-b'), undefined],
      ['GET', ksPath(one.url, 'team-b', 'orders'), undefined],
      ['GET', ksPath(one.url, 'team-b', 'missing'), undefined],
      ['POST', ksPath(one.url, 'team-b'), kafkaSource('team-b', 'mine')],
      ['PUT', ksPath(one.url, 'team-b', 'orders'), existing],
      ['PUT', ksPath(one.url, 'team-b', 'missing'), kafkaSource('team-b', 'missing')],
      ['DELETE', ksPath(one.url, 'team-b', 'orders'), undefined],
      ['DELETE', ksPath(one.url, 'team-b', 'missing'), undefined],
      ['GET', `${one.url}/apis/sources.knative.dev/v1/namespaces/team-b/pingsources`, undefined],
      ['GET', `${one.url}/shoal/v1/namespaces/team-b/kafkasources/orders/offsets`, undefined]
    ]
    for (const [method, url, body] of attempts) {
      const answer = await call(method, url, tokens.teamA, body)
      assert.equal(answer.status, 403, `${method} ${url}: ${JSON.stringify(answer.body)}`)
      assert.equal(answer.body.reason, 'Forbidden')
      assert.match(answer.body.message, /token "team-a" cannot \w+ \w+ in namespace "team-b"/)
    }
    // A body naming team-b sent to team-a's path is refused too (the namespaces must match).
    const smuggled = await call('POST', ksPath(one.url, 'team-a'), tokens.teamA, kafkaSource('team-b', 'smuggled'))
    assert.equal(smuggled.status, 422)
    assert.equal(await storeEnd(prefix), end, 'no refused request reached the store')
    const still = await call('GET', ksPath(two.url, 'team-b', 'orders'), tokens.teamB)
    assert.equal(still.status, 200)
  })

  it("lists across namespaces only the token's own namespaces", async () => {
    for (const [namespace, name] of [
      ['team-a', 'listed'],
      ['team-a-dev', 'listed-dev']
    ] as const) {
      const created = await call('POST', ksPath(one.url, namespace), tokens.teamA, kafkaSource(namespace, name))
      assert.equal(created.status, 201, JSON.stringify(created.body))
    }
    const all = await call('GET', ksPath(two.url), tokens.teamA)
    assert.equal(all.status, 200)
    const namespaces = new Set(all.body.items.map((i: { metadata: { namespace: string } }) => i.metadata.namespace))
    assert.ok(namespaces.has('team-a') && namespaces.has('team-a-dev'), [...namespaces].join())
    assert.ok(!namespaces.has('team-b'), 'team-b is not visible to team-a')
    const admin = await call('GET', ksPath(two.url), tokens.admin)
    assert.ok(admin.body.items.some((i: { metadata: { namespace: string } }) => i.metadata.namespace === 'team-b'))
  })

  it("keeps Dispatchers, cordon, rebalance and the replicas' internal endpoints from tenants", async () => {
    const end = await storeEnd(prefix)
    const dispatchers = `${one.url}/apis/shoal.dev/v1alpha1/dispatchers`
    const cordon = {
      apiVersion: 'shoal.dev/v1alpha1',
      kind: 'Dispatcher',
      metadata: { name: 'dispatcher-0' },
      spec: { unschedulable: true }
    }
    const forbidden: Array<[string, string, unknown]> = [
      ['GET', dispatchers, undefined],
      ['GET', `${dispatchers}/dispatcher-0`, undefined],
      ['POST', dispatchers, cordon],
      ['PUT', `${dispatchers}/dispatcher-0`, cordon],
      ['DELETE', `${dispatchers}/dispatcher-0`, undefined],
      ['GET', `${one.url}/shoal/v1/rebalance`, undefined],
      ['POST', `${one.url}/shoal/v1/rebalance`, { revision: 1 }],
      ['GET', `${one.url}/metrics`, undefined],
      ['GET', `${one.url}/ui`, undefined]
    ]
    for (const [method, url, body] of forbidden) {
      const answer = await call(method, url, tokens.teamA, body)
      assert.equal(answer.status, 403, `${method} ${url}`)
    }
    const op = { op: { kind: 'delete', key: 'KafkaSource/team-b/orders' } }
    for (const [method, url, body] of [
      ['POST', `${one.url}/internal/v1/writes`, op],
      ['GET', `${one.url}/internal/v1/controllers`, undefined]
    ] as const) {
      const answer = await call(method, url, tokens.teamA, body)
      assert.equal(answer.status, 404, `${method} ${url}: the internal surface does not exist for tenants`)
    }
    assert.equal(await storeEnd(prefix), end)
  })

  it("refuses a tenant's source that names internal topics, foreign or internal groups, or forbidden sinks", async () => {
    const end = await storeEnd(prefix)
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ topics: [`${prefix}.resources`] }, 'spec.topics[0]'],
      [{ topics: ['orders', '__consumer_offsets'] }, 'spec.topics[1]'],
      [{ consumerGroup: 'team-b.orders' }, 'spec.consumerGroup'],
      [{ consumerGroup: `${prefix}-controllers` }, 'spec.consumerGroup'],
      [{ consumerGroup: 'knative-kafka-source-0000' }, 'spec.consumerGroup'],
      [{ sink: { uri: 'http://169.254.169.254/latest/meta-data/' } }, 'spec.sink.uri'],
      [{ sink: { uri: 'http://[fe80::1]:8080/' } }, 'spec.sink.uri'],
      [{ sink: { uri: `${two.url}/apis` } }, 'spec.sink.uri'],
      [{ sink: { uri: `http://localhost:${new URL(one.url).port}/` } }, 'spec.sink.uri'],
      [{ delivery: { deadLetterSink: { uri: 'http://169.254.1.1/' } } }, 'spec.delivery.deadLetterSink.uri'],
      [
        { sink: { ref: { apiVersion: 'v1', kind: 'Service', name: 'sink', namespace: 'team-b' } } },
        'spec.sink.ref.namespace'
      ]
    ]
    for (const [spec, field] of cases) {
      const answer = await call('POST', ksPath(one.url, 'team-a'), tokens.teamA, kafkaSource('team-a', 'bad', spec))
      assert.equal(answer.status, 422, `${JSON.stringify(spec)}: ${JSON.stringify(answer.body)}`)
      const fields = answer.body.details.causes.map((c: { field: string }) => c.field)
      assert.ok(fields.includes(field), `${field} in ${fields.join(', ')}`)
    }
    assert.equal(await storeEnd(prefix), end)
  })

  it('lets a tenant use groups under its namespace, the default group, and keep its stored group on update', async () => {
    const grouped = await call(
      'POST',
      ksPath(one.url, 'team-a'),
      tokens.teamA,
      kafkaSource('team-a', 'grouped', { consumerGroup: 'team-a.orders' })
    )
    assert.equal(grouped.status, 201, JSON.stringify(grouped.body))
    const plain = await call('POST', ksPath(one.url, 'team-a'), tokens.teamA, kafkaSource('team-a', 'plain'))
    assert.equal(plain.status, 201)
    assert.match(plain.body.spec.consumerGroup, /^knative-kafka-source-/)
    // Sending back what GET returned (with the server's default group) is an update, not a new group.
    const read = await call('GET', ksPath(two.url, 'team-a', 'plain'), tokens.teamA)
    const updated = await call('PUT', ksPath(two.url, 'team-a', 'plain'), tokens.teamA, {
      ...read.body,
      spec: { ...read.body.spec, consumers: 2 }
    })
    assert.equal(updated.status, 200, JSON.stringify(updated.body))
    const deleted = await call('DELETE', ksPath(two.url, 'team-a', 'grouped'), tokens.teamA)
    assert.equal(deleted.status, 200)
  })

  it('forwards writes between replicas with the internal token (every bucket, from either replica)', async () => {
    const names = Array.from({ length: 8 }, (_, i) => `fwd-${i}`)
    for (const [i, name] of names.entries()) {
      const via = i % 2 === 0 ? one : two
      const answer = await call('POST', ksPath(via.url, 'team-a'), tokens.teamA, kafkaSource('team-a', name))
      assert.equal(answer.status, 201, `${name}: ${JSON.stringify(answer.body)}`)
    }
    for (const name of names) {
      const answer = await call('DELETE', ksPath(one.url, 'team-a', name), tokens.teamA)
      assert.equal(answer.status, 200, name)
    }
  })

  it('lets an admin do everything: other namespaces, internal topics and groups, dispatchers, rebalance, internals', async () => {
    const source = kafkaSource('team-b', 'admin-made', { topics: [`${prefix}.status`], consumerGroup: 'anything' })
    assert.equal((await call('POST', ksPath(one.url, 'team-b'), tokens.admin, source)).status, 201)
    assert.equal((await call('GET', ksPath(two.url, 'team-b', 'admin-made'), tokens.admin)).status, 200)
    assert.equal((await call('DELETE', ksPath(two.url, 'team-b', 'admin-made'), tokens.admin)).status, 200)
    const dispatchers = await call('GET', `${one.url}/apis/shoal.dev/v1alpha1/dispatchers`, tokens.admin)
    assert.equal(dispatchers.status, 200)
    const cordon = {
      apiVersion: 'shoal.dev/v1alpha1',
      kind: 'Dispatcher',
      metadata: { name: 'dispatcher-9' },
      spec: { unschedulable: true }
    }
    const cordoned = await call('POST', `${one.url}/apis/shoal.dev/v1alpha1/dispatchers`, tokens.admin, cordon)
    assert.equal(cordoned.status, 201, JSON.stringify(cordoned.body))
    const rebalance = await call('GET', `${two.url}/shoal/v1/rebalance`, tokens.admin)
    assert.ok(![401, 403, 404].includes(rebalance.status), `rebalance: ${rebalance.status}`)
    assert.equal((await call('GET', `${one.url}/internal/v1/controllers`, tokens.admin)).status, 200)
    const metrics = await call('GET', `${one.url}/metrics`, tokens.admin)
    assert.equal(metrics.status, 200)
    assert.match(String(metrics.body), /# HELP/)
    // The sink policy holds for admins too: the dispatchers would refuse the sink anyway.
    const metadata = kafkaSource('team-b', 'meta', { sink: { uri: 'http://169.254.169.254/' } })
    assert.equal((await call('POST', ksPath(one.url, 'team-b'), tokens.admin, metadata)).status, 422)
  })

  it('limits a token to its request rate with 429 and Retry-After', async () => {
    const answers = []
    for (let i = 0; i < 4; i++) answers.push(await call('GET', ksPath(one.url, 'slow'), tokens.slow))
    assert.deepEqual(
      answers.map(a => a.status),
      [200, 200, 429, 429]
    )
    assert.equal(answers[2]?.body.reason, 'TooManyRequests')
    assert.match(answers[2]?.headers.get('retry-after') ?? '', /^[1-9]\d*$/)
    // Limits are per token: another tenant is not slowed down.
    assert.equal((await call('GET', ksPath(one.url, 'team-b'), tokens.teamB)).status, 200)
  })
})
