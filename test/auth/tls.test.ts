import assert from 'node:assert/strict'
import { execFileSync, spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { Agent, request } from 'undici'
import { startControllerProcess } from '../helpers/controllers.ts'
import type { ControllerProcess } from '../helpers/controllers.ts'
import { uniqueName } from '../helpers/kafka.ts'
import { shoalBin } from '../helpers/processes.ts'
import { eventually } from '../helpers/wait.ts'
import { kafkaSource, ksPath, tokens, writeTokensFile } from './helpers.ts'

// Two replicas serving HTTPS with one self-signed certificate, in multi-tenant mode: writes forwarded between
// them over TLS with the internal token, and the CLI with --token and --certificate-authority.

const directory = mkdtempSync(join(tmpdir(), 'shoal-tls-'))
const cert = join(directory, 'cert.pem')
const key = join(directory, 'key.pem')
const prefix = uniqueName('tls')
let one: ControllerProcess
let two: ControllerProcess
let agent: Agent

before(async () => {
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-days',
      '1',
      '-subj',
      '/CN=shoal-test',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
      '-keyout',
      key,
      '-out',
      cert
    ],
    { stdio: 'ignore' }
  )
  const file = writeTokensFile(directory)
  const flags = ['--tokens', file, '--tls-cert', cert, '--tls-key', key]
  one = await startControllerProcess(prefix, flags)
  two = await startControllerProcess(prefix, flags)
  agent = new Agent({ connect: { ca: readFileSync(cert, 'utf8') } })
  await eventually(
    async () => {
      const answer = await call('GET', `${one.url}/internal/v1/controllers`, tokens.admin)
      return answer.status === 200 && (answer.body as { replicas: unknown[] }).replicas.length === 2 ? true : undefined
    },
    60_000,
    'two controllers'
  )
})

after(async () => {
  await Promise.all([one?.stop(), two?.stop()])
  await agent?.close()
  rmSync(directory, { recursive: true, force: true })
})

async function call(method: string, url: string, token: string, body?: unknown) {
  const response = await request(url, {
    method: method as 'GET',
    dispatcher: agent,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  return { status: response.statusCode, body: await response.body.json() }
}

function cli(
  args: readonly string[],
  env: Record<string, string> = {}
): Promise<{ code: number; out: string; err: string }> {
  return new Promise(resolve => {
    const child = spawn(process.execPath, [shoalBin, ...args], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe']
    })
    let out = ''
    let err = ''
    child.stdout.on('data', c => (out += String(c)))
    child.stderr.on('data', c => (err += String(c)))
    child.on('exit', code => resolve({ code: code ?? -1, out, err }))
  })
}

describe('API over TLS', () => {
  it('serves https and forwards writes between replicas over TLS', async () => {
    assert.match(one.url, /^https:\/\//)
    for (let i = 0; i < 6; i++) {
      const via = i % 2 === 0 ? one : two
      const answer = await call('POST', ksPath(via.url, 'team-a'), tokens.teamA, kafkaSource('team-a', `tls-${i}`))
      assert.equal(answer.status, 201, JSON.stringify(answer.body))
    }
  })

  it('lets the CLI in with --token and --certificate-authority, and not without them', async () => {
    const ok = await cli([
      'get',
      'ks',
      '-n',
      'team-a',
      '-s',
      one.url,
      '--token',
      tokens.teamA,
      '--certificate-authority',
      cert
    ])
    assert.equal(ok.code, 0, ok.err)
    assert.match(ok.out, /tls-0/)
    const viaEnv = await cli(['get', 'ks', '-n', 'team-a', '-s', two.url], {
      SHOAL_TOKEN: tokens.teamA,
      SHOAL_CA: cert
    })
    assert.equal(viaEnv.code, 0, viaEnv.err)
    const forbidden = await cli([
      'get',
      'ks',
      '-n',
      'team-b',
      '-s',
      one.url,
      '--token',
      tokens.teamA,
      '--certificate-authority',
      cert
    ])
    assert.equal(forbidden.code, 1)
    assert.match(forbidden.err, /cannot list kafkasources in namespace "team-b"/)
    const noToken = await cli(['get', 'ks', '-n', 'team-a', '-s', one.url, '--certificate-authority', cert], {
      SHOAL_TOKEN: ''
    })
    assert.equal(noToken.code, 1)
    assert.match(noToken.err, /bearer token is required/)
    const untrusted = await cli(['get', 'ks', '-n', 'team-a', '-s', one.url, '--token', tokens.teamA], { SHOAL_CA: '' })
    assert.equal(untrusted.code, 1)
    assert.match(untrusted.err, /cannot reach the Shoal API/)
  })
})
