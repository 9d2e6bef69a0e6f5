import assert from 'node:assert/strict'
import { test } from 'node:test'
import { connectionFrom, namespaceFrom, normaliseServer, parseFlags, parseTimeout } from '../../src/cli/flags.ts'
import type { CliIo } from '../../src/cli/io.ts'
import { isShoalError } from '../../src/errors/index.ts'

const usage = (pattern: RegExp) => (error: unknown) => isShoalError(error, 'SHOAL_USAGE') && pattern.test(error.message)

test('server: flag, then SHOAL_SERVER, then the default; a scheme is added when missing', () => {
  const io = (env: Record<string, string>) => ({ env }) as unknown as CliIo
  assert.equal(connectionFrom({}, io({})).server, 'http://127.0.0.1:8080')
  assert.equal(connectionFrom({}, io({ SHOAL_SERVER: 'http://env:1/' })).server, 'http://env:1')
  assert.equal(
    connectionFrom({ server: 'localhost:9' }, io({ SHOAL_SERVER: 'http://env:1' })).server,
    'http://localhost:9'
  )
  assert.equal(normaliseServer('https://api.example/shoal/'), 'https://api.example/shoal')
  assert.throws(() => normaliseServer('ftp://x'), usage(/only http and https/))
})

test('request timeouts', () => {
  assert.equal(parseTimeout(undefined), 30_000)
  assert.equal(parseTimeout('5'), 5000)
  assert.equal(parseTimeout('500ms'), 500)
  assert.equal(parseTimeout('2m'), 120_000)
  assert.equal(parseTimeout('0'), 0)
  assert.throws(() => parseTimeout('soon'), usage(/--request-timeout/))
})

test('flag mistakes are usage errors naming the flag', () => {
  const options = { namespace: { type: 'string', short: 'n' }, all: { type: 'boolean' } } as const
  assert.throws(() => parseFlags(['--nope'], options), usage(/^unknown flag: --nope$/))
  assert.throws(() => parseFlags(['-n'], options), usage(/^flag needs an argument: -n, --namespace$/))
  assert.throws(() => parseFlags(['--all=yes'], options), usage(/--all does not take an argument/))
  assert.equal(parseFlags(['-nteam', 'x'], options).values.namespace, 'team')
})

test('namespaces must be DNS labels', () => {
  assert.equal(namespaceFrom(undefined), 'default')
  assert.throws(() => namespaceFrom('Team_A'), usage(/invalid namespace "Team_A"/))
})
