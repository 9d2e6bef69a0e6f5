import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { request } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import fc from 'fast-check'
import { parseManifests, validateResource } from '../../src/api/index.ts'
import { startControllerProcess } from '../helpers/controllers.ts'
import type { ControllerProcess } from '../helpers/controllers.ts'
import { uniqueName } from '../helpers/kafka.ts'
import { storeEnd } from '../auth/helpers.ts'
import { aliasBomb, hostileBytes, hostileText, nested, validManifest } from './inputs.ts'

// The live API under hostile requests, in multi-tenant mode over the real Kafka: every answer is a 4xx, the
// controller never crashes or hangs (each request has a deadline and /healthz answers at the end), and the
// store's resources topic does not move. Time-boxed by numRuns.

const RUNS = Number(process.env['SHOAL_FUZZ_RUNS'] ?? 150)
const admin = 'fuzz-admin-token-0123456789'
const tenant = 'fuzz-tenant-token-0123456789'
const directory = mkdtempSync(join(tmpdir(), 'shoal-fuzz-'))
const prefix = uniqueName('fuzz')
let controller: ControllerProcess

before(async () => {
  const file = join(directory, 'tokens.yaml')
  writeFileSync(
    file,
    `internalToken: fuzz-internal-token-0123456789
tokens:
  - { name: admin, token: ${admin}, admin: true }
  - { name: team-a, token: ${tenant}, namespaces: [team-a], rateLimit: { requestsPerSecond: 100000, burst: 100000 } }
`
  )
  controller = await startControllerProcess(prefix, ['--tokens', file])
})

after(async () => {
  await controller?.stop()
  rmSync(directory, { recursive: true, force: true })
})

interface Sent {
  readonly method: string
  readonly path: string
  readonly body?: Uint8Array | string
  readonly headers?: Record<string, string>
}

/**
 * One raw HTTP request (any bytes, any path) on a connection of its own; its status, or a failure if there is no
 * answer within 20 s. A server may answer a body it refuses before the body is all sent and close the connection
 * (HTTP allows it): the answer counts, and the failed write of the rest does not.
 */
function send(sent: Sent): Promise<number> {
  const url = new URL(controller.url)
  return new Promise((resolve, reject) => {
    let answered: number | undefined
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        method: sent.method,
        path: sent.path,
        headers: { authorization: `Bearer ${admin}`, ...sent.headers },
        agent: false,
        timeout: 20_000
      },
      res => {
        answered = res.statusCode ?? 0
        res.resume()
        res.on('end', () => resolve(answered!))
        res.on('error', error => (answered === undefined ? reject(error) : resolve(answered)))
      }
    )
    req.on('timeout', () => req.destroy(new Error(`no answer to ${sent.method} ${sent.path} within 20 s`)))
    req.on('error', error => (answered === undefined ? reject(error) : resolve(answered)))
    req.end(sent.body)
  })
}

const collection = '/apis/sources.knative.dev/v1beta1/namespaces/team-a/kafkasources'

/** True if the text would be stored (so a 2xx would be right): such inputs are left out of the fuzzing. */
function storable(text: string): boolean {
  try {
    const values = parseManifests(text)
    if (values.length !== 1) return false
    validateResource(values[0])
    return true
  } catch {
    return false
  }
}

function isClientError(status: number): boolean {
  return status >= 400 && status < 500
}

describe('fuzz: the live API', () => {
  it('answers hostile bodies on create and replace with a 4xx and stores nothing', async () => {
    const end = await storeEnd(prefix)
    const contentType = fc.constantFrom('application/yaml', 'application/json', 'text/plain', '', 'application/x-yaml')
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          hostileBytes,
          hostileText.filter(t => !storable(t))
        ),
        fc.constantFrom('POST', 'PUT'),
        contentType,
        async (body, method, type) => {
          if (typeof body !== 'string' && storable(Buffer.from(body).toString('utf8'))) return
          const path = method === 'POST' ? collection : `${collection}/fuzz`
          const status = await send({ method, path, body, headers: { 'content-type': type } })
          assert.ok(isClientError(status), `${method} answered ${status}`)
        }
      ),
      { numRuns: RUNS }
    )
    assert.equal(await storeEnd(prefix), end, 'no hostile request changed the store')
  })

  it('answers huge, deeply nested and alias-bomb bodies with 413 or 400', async () => {
    const end = await storeEnd(prefix)
    const bodies: Array<[string, string | Uint8Array]> = [
      ['2 MiB', 'a'.repeat(2 * 1024 * 1024)],
      ['1 MiB of [', nested(1_000_000, 'list').slice(0, 1_048_000)],
      ['nested maps', nested(150_000, 'map')],
      ['alias bomb', aliasBomb(10, 10)],
      ['compact dashes', `${'- '.repeat(400_000)}x`],
      ['UTF-16 with BOM', Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(validManifest, 'utf16le')])],
      ['invalid UTF-8', Buffer.concat([Buffer.from(validManifest), Buffer.from([0xc3, 0x28])])]
    ]
    for (const [what, body] of bodies) {
      const status = await send({
        method: 'POST',
        path: collection,
        body,
        headers: { 'content-type': 'application/yaml' }
      }).catch((error: unknown) => {
        throw new Error(`${what}: no answer (${String(error)})`)
      })
      assert.ok(status === 400 || status === 413, `${what}: ${status}`)
    }
    assert.equal(await storeEnd(prefix), end)
  })

  it('answers hostile paths, methods and tokens without a 5xx and without storing anything', async () => {
    const end = await storeEnd(prefix)
    const segment = fc.oneof(
      fc.constantFrom(
        'apis',
        'namespaces',
        'team-a',
        'team-b',
        'kafkasources',
        'pingsources',
        'dispatchers',
        'internal',
        'v1',
        '%zz',
        '%',
        '..',
        '%2F',
        ''
      ),
      fc.string({ maxLength: 12 }).map(s => encodeURIComponent(s))
    )
    await fc.assert(
      fc.asyncProperty(
        fc.array(segment, { maxLength: 8 }),
        fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD'),
        fc.constantFrom(
          `Bearer ${tenant}`,
          `Bearer ${admin}`,
          'Bearer x',
          '',
          `bearer  ${tenant}`,
          'Basic Zm9vOmJhcg=='
        ),
        fc.option(hostileText, { nil: undefined }),
        async (segments, method, authorization, text) => {
          if (text !== undefined && storable(text)) return
          const path = `/${segments.join('/')}`
          const body = method === 'GET' || method === 'HEAD' ? undefined : text
          const status = await send({
            method,
            path,
            ...(body === undefined ? {} : { body }),
            headers: { authorization }
          })
          assert.ok(status >= 200 && status < 500, `${method} ${path} answered ${status}`)
        }
      ),
      { numRuns: RUNS }
    )
    assert.equal(await storeEnd(prefix), end)
    assert.equal(await send({ method: 'GET', path: '/healthz' }), 200)
  })
})
