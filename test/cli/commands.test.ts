import assert from 'node:assert/strict'
import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, beforeEach, test } from 'node:test'
import { parse } from 'yaml'
import { main } from '../../src/cli/main.ts'
import { captureIo } from './capture.ts'
import { FakeApi } from './fake-api.ts'
import { kafkaSource, now, pingSource } from './fixtures.ts'

let api: FakeApi

before(async () => {
  api = await FakeApi.start()
})
after(() => api.close())
beforeEach(() => {
  api.objects.clear()
  api.requests.length = 0
  api.seed(kafkaSource('orders', { labels: { team: 'a' } }))
  api.seed(kafkaSource('payments', { labels: { team: 'b' }, ready: 'False', reason: 'SinkNotFound' }))
  api.seed(kafkaSource('other', { namespace: 'team-x' }))
  api.seed(pingSource('tick'))
})

async function run(args: string[], env: Record<string, string> = { SHOAL_SERVER: api.url }) {
  const out = captureIo({ env, now })
  const code = await main(args, out.io)
  return { code, stdout: out.stdout(), stderr: out.stderr() }
}

test('get lists a kind as a table, sorted by name', async () => {
  const result = await run(['get', 'kafkasources'])
  assert.equal(result.code, 0)
  assert.equal(
    result.stdout,
    [
      'NAME       TOPICS       BOOTSTRAPSERVERS     READY   REASON         AGE',
      'orders     ["orders"]   ["localhost:9092"]   True                   5m',
      'payments   ["orders"]   ["localhost:9092"]   False   SinkNotFound   5m',
      ''
    ].join('\n')
  )
  assert.equal(api.requests[0]?.path, '/apis/sources.knative.dev/v1beta1/namespaces/default/kafkasources')
})

test('get -A lists across namespaces with a NAMESPACE column; -l filters', async () => {
  const all = await run(['get', 'ks', '-A'])
  assert.deepEqual(
    all.stdout.split('\n').map(line =>
      line
        .split(/\s{3,}/)
        .slice(0, 2)
        .join(' ')
    ),
    ['NAMESPACE NAME', 'default orders', 'default payments', 'team-x other', '']
  )
  assert.equal(api.requests[0]?.path, '/apis/sources.knative.dev/v1beta1/kafkasources')

  const selected = await run(['get', 'ks', '-l', 'team=b', '-o', 'name'])
  assert.equal(selected.stdout, 'kafkasource.sources.knative.dev/payments\n')
  assert.equal(
    api.requests.at(-1)?.path,
    '/apis/sources.knative.dev/v1beta1/namespaces/default/kafkasources?labelSelector=team%3Db'
  )

  const setBased = await run(['get', 'ks', '-l', 'team in (a,c)', '-o', 'name'])
  assert.equal(setBased.stdout, 'kafkasource.sources.knative.dev/orders\n')

  const bad = await run(['get', 'ks', '-l', 'team=='])
  assert.equal(bad.code, 0) // `team==` is a valid selector: team equals the empty value
  const worse = await run(['get', 'ks', '-l', '=x'])
  assert.equal(worse.code, 2)
  assert.match(worse.stderr, /^error: unable to parse requirement "=x"/)
})

test('get all prints one table per kind with qualified names', async () => {
  const result = await run(['get', 'all'])
  assert.match(result.stdout, /^NAME\s+TOPICS.*\nkafkasource\.sources\.knative\.dev\/orders\s/)
  assert.match(
    result.stdout,
    /\n\nNAME\s+SINK\s+SCHEDULE\s+AGE\s+READY\s+REASON\npingsource\.sources\.knative\.dev\/tick\s/
  )
})

test('nothing found goes to stderr, as kubectl says it', async () => {
  const result = await run(['get', 'ps', '-n', 'empty'])
  assert.deepEqual(result, { code: 0, stdout: '', stderr: 'No resources found in empty namespace.\n' })
  assert.equal((await run(['get', 'ps', '-A', '-l', 'x=y'])).stderr, 'No resources found\n')
})

test('get by name: -o yaml prints the object, json a List of several; a missing name is a server error', async () => {
  const one = await run(['get', 'ks', 'orders', '-o', 'yaml'])
  assert.equal((parse(one.stdout) as { metadata: { name: string } }).metadata.name, 'orders')
  const two = await run(['get', 'ks', 'orders', 'payments', '-o', 'json'])
  const list = JSON.parse(two.stdout) as { kind: string; items: unknown[] }
  assert.equal(list.kind, 'List')
  assert.equal(list.items.length, 2)
  assert.match(two.stdout, /^\{\n {4}"apiVersion"/)

  const missing = await run(['get', 'ks', 'orders', 'nope'])
  assert.equal(missing.code, 1)
  assert.match(missing.stdout, /^NAME.*\norders\s/)
  assert.equal(missing.stderr, 'Error from server (NotFound): kafkasources.sources.knative.dev "nope" not found\n')
})

test('get usage errors exit 2', async () => {
  const cases: [string[], string][] = [
    [['get'], 'error: you must specify the type of resource to get'],
    [['get', 'foo'], 'error: unknown resource type "foo"'],
    [['get', 'ks', '-o', 'table'], 'error: unable to match a printer suitable for the output format "table"'],
    [['get', 'ks', 'x', '-A'], 'error: a resource cannot be retrieved by name across all namespaces'],
    [['get', 'ks', '--watch'], 'error: unknown flag: --watch']
  ]
  for (const [args, message] of cases) {
    const result = await run(args)
    assert.equal(result.code, 2, args.join(' '))
    assert.ok(result.stderr.startsWith(message), result.stderr)
  }
})

test('describe shows metadata, spec, status and conditions', async () => {
  const result = await run(['describe', 'ks', 'payments'])
  assert.equal(result.code, 0)
  for (const line of [
    /^Name:\s+payments$/m,
    /^Namespace:\s+default$/m,
    /^Labels:\s+team=b$/m,
    /^API Version:\s+sources\.knative\.dev\/v1beta1$/m,
    /^ {2}UID:\s+uid-payments$/m,
    /^Spec:\n {2}Bootstrap Servers:\n {4}localhost:9092$/m,
    /^ {2}Sink URI:\s+http:\/\/sink\.example\/$/m,
    /^ {2}Type\s+Status\s+Reason\s+Message\s+Last Transition$/m,
    /^ {2}Ready\s+False\s+SinkNotFound\s+2024-05-01T12:00:00Z$/m
  ]) {
    assert.match(result.stdout, line)
  }
  const missing = await run(['describe', 'ks/nope'])
  assert.deepEqual(missing, {
    code: 1,
    stdout: '',
    stderr: 'Error from server (NotFound): kafkasources.sources.knative.dev "nope" not found\n'
  })
  const everything = await run(['describe', 'ks'])
  assert.equal(everything.stdout.match(/^Name:/gm)?.length, 2)
})

test('delete by name and by manifest; not found is an error unless ignored', async () => {
  const result = await run(['delete', 'ks', 'orders', 'nope'])
  assert.equal(result.code, 1)
  assert.equal(result.stdout, 'kafkasource.sources.knative.dev "orders" deleted\n')
  assert.equal(result.stderr, 'Error from server (NotFound): kafkasources.sources.knative.dev "nope" not found\n')
  assert.equal(api.objects.has('KafkaSource/default/orders'), false)

  assert.equal((await run(['delete', 'ks', 'nope', '--ignore-not-found'])).code, 0)

  const manifest = JSON.stringify([kafkaSource('other', { namespace: 'team-x' }), pingSource('tick')])
  const out = captureIo({ env: { SHOAL_SERVER: api.url }, stdin: manifest })
  assert.equal(await main(['delete', '-f', '-'], out.io), 0)
  assert.equal(
    out.stdout(),
    'kafkasource.sources.knative.dev "other" deleted\npingsource.sources.knative.dev "tick" deleted\n'
  )
  assert.equal(api.objects.size, 1)

  const noName = await run(['delete', 'ks'])
  assert.equal(noName.code, 2)
  assert.match(noName.stderr, /^error: resource\(s\) were provided, but no name was specified/)
  assert.equal((await run(['delete'])).code, 2)
})

test('version prints the client and the server version', async () => {
  const result = await run(['version'])
  assert.match(result.stdout, /^Client Version: \d+\.\d+\.\d+\nServer Version: 9\.9\.9\n$/)
  const client = await run(['version', '--client', '-o', 'json'])
  assert.deepEqual(Object.keys(JSON.parse(client.stdout) as object), ['clientVersion'])
})

test('an unreachable server is one line, exit 1, no stack', async () => {
  const closed = createServer()
  closed.listen(0, '127.0.0.1')
  await once(closed, 'listening')
  const port = (closed.address() as AddressInfo).port
  closed.close()
  await once(closed, 'close')
  const result = await run(['get', 'ks', '--server', `http://127.0.0.1:${port}`], {})
  assert.deepEqual(result, {
    code: 1,
    stdout: '',
    stderr: `error: cannot reach the Shoal API at http://127.0.0.1:${port}: connection refused (is shoal controller running?)\n`
  })
})

test('a server that does not answer in time is one line, exit 1', async t => {
  const silent = createServer(() => {})
  silent.listen(0, '127.0.0.1')
  await once(silent, 'listening')
  t.after(() => {
    silent.closeAllConnections()
    silent.close()
  })
  const url = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`
  const result = await run(['get', 'ks', '--request-timeout', '200ms'], { SHOAL_SERVER: url })
  assert.deepEqual(result, {
    code: 1,
    stdout: '',
    stderr: `error: the Shoal API at ${url} did not answer within 0.2s (see --request-timeout)\n`
  })
})

test('help lists every command; unknown commands exit 2; flags may precede the command', async () => {
  const help = await run(['--help'])
  assert.equal(help.code, 0)
  for (const command of ['up', 'controller', 'kafka', 'apply', 'get', 'describe', 'delete', 'version', 'help']) {
    assert.match(help.stdout, new RegExp(`^  ${command}\\s`, 'm'), command)
  }
  // The connection flags every API command takes, with the multi-tenant ones.
  for (const flag of ['-s, --server', '--request-timeout', '--token', '--certificate-authority']) {
    assert.ok(help.stdout.includes(flag), flag)
  }
  assert.equal((await run(['help', 'get'])).stdout.startsWith('List resources'), true)
  assert.equal((await run(['get', '--help'])).code, 0)
  const unknown = await run(['frobnicate'])
  assert.equal(unknown.code, 2)
  assert.match(unknown.stderr, /^error: unknown command "frobnicate" for "shoal"/)

  const hoisted = await run(['-n', 'team-x', '--server', api.url, 'get', 'ks', '-o', 'name'], {})
  assert.equal(hoisted.stdout, 'kafkasource.sources.knative.dev/other\n')
})
