// `shoal kafka start` arguments and the failures a user meets first, none of which need Java to trip.
import assert from 'node:assert/strict'
import { once } from 'node:events'
import { createServer } from 'node:net'
import type { AddressInfo } from 'node:net'
import { mock, test } from 'node:test'
import { isShoalError } from '../../src/errors/index.ts'
import { parseKafkaArgs, runKafkaCommand, startEmbeddedKafka } from '../../src/kafka/embedded/index.ts'

/** Runs the command with stdout and stderr captured. */
async function run(argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = ''
  let stderr = ''
  const out = mock.method(process.stdout, 'write', (chunk: string | Uint8Array) => ((stdout += String(chunk)), true))
  const err = mock.method(process.stderr, 'write', (chunk: string | Uint8Array) => ((stderr += String(chunk)), true))
  try {
    const code = await runKafkaCommand(argv)
    return { code, stdout, stderr }
  } finally {
    out.mock.restore()
    err.mock.restore()
  }
}

for (const [argv, named] of [
  [['start', '--brokers', '2'], '--brokers'],
  [['start', '--port', 'abc'], '--port'],
  [['start', '--port', '70000'], '--port'],
  [['start', '--bogus'], '--bogus'],
  [['start', '--port'], '--port'],
  [['start', 'extra'], 'extra'],
  [['stop'], 'stop']
] as const) {
  test(`shoal kafka ${argv.join(' ')} exits 2 naming ${named}`, async () => {
    const { code, stdout, stderr } = await run([...argv])
    assert.equal(code, 2)
    assert.equal(stdout, '')
    assert.equal(stderr.trimEnd().split('\n').length, 1, 'one line')
    assert.match(stderr, new RegExp(`^shoal kafka: .*${named.replace(/[-]/g, '\\-')}`))
  })
}

test('shoal kafka start defaults to one broker on port 9092', () => {
  assert.deepEqual(parseKafkaArgs(['start']), { kind: 'start', brokers: 1, port: 9092, dataDir: undefined })
  assert.deepEqual(parseKafkaArgs(['start', '--brokers', '3', '--port', '0', '--data-dir', 'd']), {
    kind: 'start',
    brokers: 3,
    port: 0,
    dataDir: 'd'
  })
})

test('a port in use gives one clear line, before anything else is tried', async () => {
  const server = createServer()
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo
  try {
    // A java that cannot exist: the port check must trip first.
    const env = { ...process.env, JAVA_HOME: '/nonexistent-java-home' }
    await assert.rejects(startEmbeddedKafka({ port, env }), error => {
      assert.ok(isShoalError(error, 'SHOAL_PORT_IN_USE'))
      assert.equal(error.message, `port ${port} is in use`)
      return true
    })
    const { code, stderr } = await run(['start', '--port', String(port)])
    assert.equal(code, 1)
    assert.equal(stderr, `shoal: port ${port} is in use\n`)
  } finally {
    server.close()
  }
})

test('a missing java gives one clear line', async () => {
  const env = { ...process.env, JAVA_HOME: '/nonexistent-java-home' }
  await assert.rejects(startEmbeddedKafka({ env }), error => {
    assert.ok(isShoalError(error, 'SHOAL_JAVA'))
    assert.match(error.message, /needs Java 17 or newer, but there is no java on JAVA_HOME=\/nonexistent-java-home$/)
    return true
  })
})
