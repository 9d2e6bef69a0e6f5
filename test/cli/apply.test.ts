import assert from 'node:assert/strict'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, beforeEach, test } from 'node:test'
import { main } from '../../src/cli/main.ts'
import { captureIo } from './capture.ts'
import { FakeApi, failure } from './fake-api.ts'

let api: FakeApi
let dir: string

before(async () => {
  api = await FakeApi.start()
  dir = await mkdtemp(join(tmpdir(), 'shoal-apply-'))
})
after(async () => {
  await api.close()
  await rm(dir, { recursive: true, force: true })
})
beforeEach(() => {
  api.objects.clear()
  api.requests.length = 0
  api.interceptor = undefined
})

const kafkaManifest = (name: string, extra = '') => `apiVersion: sources.knative.dev/v1beta1
kind: KafkaSource
metadata:
  name: ${name}${extra}
spec:
  bootstrapServers: [localhost:9092]
  topics: [orders]
  sink:
    uri: http://sink.example/
`

async function run(args: string[], stdin?: string) {
  const out = captureIo({ env: { SHOAL_SERVER: api.url }, ...(stdin === undefined ? {} : { stdin }) })
  const code = await main(args, out.io)
  return { code, stdout: out.stdout(), stderr: out.stderr() }
}

async function file(name: string, text: string): Promise<string> {
  const path = join(dir, name)
  await writeFile(path, text)
  return path
}

test('apply creates, then reports unchanged (despite server defaults), then configured', async () => {
  const path = await file('a.yaml', kafkaManifest('orders-source'))
  assert.deepEqual(await run(['apply', '-f', path]), {
    code: 0,
    stdout: 'kafkasource.sources.knative.dev/orders-source created\n',
    stderr: ''
  })
  assert.equal(api.objects.get('KafkaSource/default/orders-source')?.metadata['namespace'], 'default')

  const again = await run(['apply', '-f', path])
  assert.equal(again.stdout, 'kafkasource.sources.knative.dev/orders-source unchanged\n')
  assert.equal(api.objects.get('KafkaSource/default/orders-source')?.metadata['generation'], 1)

  await writeFile(path, kafkaManifest('orders-source', '\n  labels: {team: a}'))
  const changed = await run(['apply', '-f', path])
  assert.equal(changed.stdout, 'kafkasource.sources.knative.dev/orders-source configured\n')
  assert.deepEqual(api.objects.get('KafkaSource/default/orders-source')?.metadata['labels'], { team: 'a' })
})

test('re-applying a manifest the server holds with the API defaults sends no write', async () => {
  const path = await file('c.yaml', kafkaManifest('c'))
  await run(['apply', '-f', path])
  const stored = api.objects.get('KafkaSource/default/c')
  assert.ok(stored)
  stored.spec = { ...(stored.spec as object), initialOffset: 'latest', ordering: 'ordered' }
  api.requests.length = 0
  assert.equal((await run(['apply', '-f', path])).stdout, 'kafkasource.sources.knative.dev/c unchanged\n')
  assert.deepEqual(
    api.requests.map(r => r.method),
    ['POST', 'GET']
  )
})

test('the update is a compare-and-set on the version just read, retried on conflict', async () => {
  const path = await file('b.yaml', kafkaManifest('b'))
  await run(['apply', '-f', path])
  await writeFile(path, kafkaManifest('b').replace('orders', 'payments'))
  const readVersion = api.objects.get('KafkaSource/default/b')?.metadata['resourceVersion']
  let conflicts = 1
  api.requests.length = 0
  api.interceptor = (request, response) => {
    if (request.method !== 'PUT' || conflicts === 0) return false
    conflicts--
    failure(response, 409, 'Conflict', 'the object has been modified')
    return true
  }
  const result = await run(['apply', '-f', path])
  assert.equal(result.stdout, 'kafkasource.sources.knative.dev/b configured\n')
  const puts = api.requests.filter(r => r.method === 'PUT')
  assert.equal(puts.length, 2)
  for (const put of puts)
    assert.equal((put.body as { metadata: Record<string, unknown> }).metadata['resourceVersion'], readVersion)
  assert.deepEqual((api.objects.get('KafkaSource/default/b')?.spec as { topics: unknown }).topics, ['payments'])
})

test('a manifest naming a stale resourceVersion is refused with a conflict, and the live object is kept', async () => {
  const path = await file('rv.yaml', kafkaManifest('rv'))
  await run(['apply', '-f', path])
  const first = String(api.objects.get('KafkaSource/default/rv')?.metadata['resourceVersion'])
  // Someone else changes it: the version moves on.
  await writeFile(path, kafkaManifest('rv').replace('orders', 'payments'))
  assert.equal((await run(['apply', '-f', path])).stdout, 'kafkasource.sources.knative.dev/rv configured\n')
  const second = String(api.objects.get('KafkaSource/default/rv')?.metadata['resourceVersion'])
  assert.notEqual(second, first)
  // A manifest read at the first version, applied now: a conflict, not a silent overwrite.
  await writeFile(path, kafkaManifest('rv', `\n  resourceVersion: "${first}"`).replace('orders', 'refunds'))
  const stale = await run(['apply', '-f', path])
  assert.equal(stale.code, 1)
  assert.match(stale.stderr, /Error from server \(Conflict\)/)
  assert.deepEqual((api.objects.get('KafkaSource/default/rv')?.spec as { topics: unknown }).topics, ['payments'])
  // At the current version it applies.
  await writeFile(path, kafkaManifest('rv', `\n  resourceVersion: "${second}"`).replace('orders', 'refunds'))
  assert.equal((await run(['apply', '-f', path])).stdout, 'kafkasource.sources.knative.dev/rv configured\n')
})

test('an invalid object prints the server message with every cause; the others are still applied', async () => {
  const text = `${kafkaManifest('bad')
    .replace('  sink:\n    uri: http://sink.example/\n', '')
    .replace('  topics: [orders]\n', '')}---\n${kafkaManifest('good')}`
  const result = await run(['apply', '-f', await file('mixed.yaml', text)])
  assert.equal(result.code, 1)
  assert.equal(result.stdout, 'kafkasource.sources.knative.dev/good created\n')
  assert.equal(result.stderr, 'error: KafkaSource default/bad is invalid: spec.sink: required; spec.topics: required\n')
})

test('apply reads directories, stdin, JSON lists; -n fills in namespaces; unknown kinds fail alone', async () => {
  const d = join(dir, 'manifests')
  await import('node:fs/promises').then(fs => fs.mkdir(d))
  await writeFile(
    join(d, '2-ping.json'),
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'List',
      items: [
        {
          apiVersion: 'sources.knative.dev/v1',
          kind: 'PingSource',
          metadata: { name: 'tick' },
          spec: { schedule: '* * * * *', sink: { uri: 'http://s/' } }
        }
      ]
    })
  )
  await writeFile(join(d, '1-kafka.yml'), kafkaManifest('k'))
  await writeFile(join(d, 'README.md'), 'not a manifest')
  const stdin = `apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n---\n${kafkaManifest('from-stdin')}`
  const result = await run(['apply', '-n', 'team-a', '-f', d, '-f', '-'], stdin)
  assert.equal(result.code, 1)
  assert.equal(
    result.stdout,
    [
      'kafkasource.sources.knative.dev/k created',
      'pingsource.sources.knative.dev/tick created',
      'kafkasource.sources.knative.dev/from-stdin created',
      ''
    ].join('\n')
  )
  assert.match(
    result.stderr,
    /^error: "w" in stdin \(object 1\): no matches for kind "Widget" in version "example\.com\/v1"/
  )
  assert.ok(api.objects.has('PingSource/team-a/tick'))
})

test('usage errors exit 2 and name the argument', async () => {
  assert.deepEqual(await run(['apply']), {
    code: 2,
    stdout: '',
    stderr: "error: -f is required (a file, a directory, or - for stdin)\nSee 'shoal apply --help' for usage.\n"
  })
  const missing = await run(['apply', '-f', join(dir, 'nope.yaml')])
  assert.equal(missing.code, 1)
  assert.match(missing.stderr, /^error: the path ".*nope\.yaml" does not exist\n$/)
})
