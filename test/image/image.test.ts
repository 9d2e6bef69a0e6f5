// The image, run: a controller and a dispatcher started from the image the Dockerfile builds (made by
// `scripts/image.sh --prepare` with buildah on a debootstrap base, no Docker Hub) deliver a PingSource's events from
// the run's Kafka to a sink on this machine. `buildah run --isolation=chroot` shares the host's network, so the
// processes in the image reach the embedded Kafka and the sink on loopback, and the test reaches the controller's API.
import assert from 'node:assert/strict'
import { execFile, spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { createHash } from 'node:crypto'
import { once } from 'node:events'
import { createServer } from 'node:http'
import type { IncomingHttpHeaders, Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { after, before, describe, it } from 'node:test'
import { http } from '../helpers/http.ts'
import { brokers, uniqueName } from '../helpers/kafka.ts'
import { eventually } from '../helpers/wait.ts'

const run = promisify(execFile)
const root = fileURLToPath(new URL('../..', import.meta.url)).replace(/\/$/, '')
/** The tag scripts/image.sh --prepare gives this checkout's image. */
const image = `localhost/shoal:test-${createHash('sha256').update(root).digest('hex').slice(0, 12)}`
const PS = '/apis/sources.knative.dev/v1/namespaces/default/pingsources'

/** A `shoal` command running in a working container of the image. */
interface InImage {
  readonly child: ChildProcess
  readonly stderr: string
  /** Stops the command (buildah kills what it runs) and removes the working container. */
  stop(): Promise<void>
}

/**
 * Makes a working container of the image and runs `shoal ARGS` in it; resolves once a line of its output matches
 * `ready`, with that match.
 */
async function startInImage(args: readonly string[], ready: RegExp): Promise<InImage & { match: RegExpExecArray }> {
  const container = uniqueName('shoal-image-test')
  await run('buildah', ['from', '--quiet', '--name', container, image])
  const child = spawn(
    'buildah',
    ['run', '--isolation=chroot', '--env', 'SHOAL_LOG_LEVEL=warn', container, '--', 'shoal', ...args],
    { stdio: ['ignore', 'pipe', 'pipe'] }
  )
  let stderr = ''
  child.stderr.on('data', chunk => (stderr += String(chunk)))
  const exited = new Promise<void>(resolve => child.once('exit', () => resolve()))
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM')
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000)
    await exited
    clearTimeout(timer)
    await run('buildah', ['rm', container])
  }
  try {
    const match = await new Promise<RegExpExecArray>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`shoal ${args[0]} did not start in 60 s: ${stderr}`)), 60_000)
      createInterface({ input: child.stdout }).on('line', line => {
        const found = ready.exec(line)
        if (found) {
          clearTimeout(timer)
          resolve(found)
        }
      })
      child.once('exit', code => {
        clearTimeout(timer)
        reject(new Error(`shoal ${args[0]} in the image exited with ${code}: ${stderr}`))
      })
    })
    return {
      child,
      match,
      get stderr() {
        return stderr
      },
      stop
    }
  } catch (error) {
    await stop()
    throw error
  }
}

describe('the image', () => {
  const received: { headers: IncomingHttpHeaders; body: string }[] = []
  let sink: Server
  let sinkUrl: string
  const started: InImage[] = []

  before(async () => {
    try {
      await run('buildah', ['inspect', '--type', 'image', image])
    } catch (error) {
      throw new Error(
        `the image ${image} is not built: run \`bash scripts/image.sh --prepare\` (npm test does, for the whole ` +
          `suite or test/image/) — ${error instanceof Error ? error.message.trim() : String(error)}`,
        { cause: error }
      )
    }
    sink = createServer((req, res) => {
      const chunks: Buffer[] = []
      req.on('data', chunk => chunks.push(chunk))
      req.on('end', () => {
        received.push({ headers: req.headers, body: Buffer.concat(chunks).toString() })
        res.writeHead(202).end()
      })
    })
    sink.listen(0, '127.0.0.1')
    await once(sink, 'listening')
    sinkUrl = `http://127.0.0.1:${(sink.address() as AddressInfo).port}`
  })

  after(async () => {
    // Every working container is removed, whatever failed.
    await Promise.allSettled(started.map(p => p.stop()))
    if (sink) {
      sink.closeAllConnections()
      await new Promise<void>(resolve => sink.close(() => resolve()))
    }
  })

  it('runs a controller and a dispatcher that deliver a PingSource’s events', async () => {
    const prefix = uniqueName('image')
    const kafka = brokers().join(',')
    const controller = await startInImage(
      ['controller', '--kafka', kafka, '--port', '0', '--prefix', prefix, '--buckets', '4'],
      /serving the API on (\S+)/
    )
    started.push(controller)
    const api = controller.match[1]!
    started.push(
      await startInImage(
        [
          'dispatcher',
          '--kafka',
          kafka,
          '--prefix',
          prefix,
          '--id',
          'dispatcher-0',
          '--zone',
          'a',
          '--node',
          'a-1',
          '--capacity',
          '10'
        ],
        / up\b/
      )
    )

    const created = await http(
      'POST',
      `${api}${PS}`,
      [
        'apiVersion: sources.knative.dev/v1',
        'kind: PingSource',
        'metadata: {name: from-image}',
        'spec:',
        '  schedule: "* * * * * *"',
        '  contentType: application/json',
        `  data: '{"from":"image"}'`,
        `  sink: {uri: "${sinkUrl}/ping"}`,
        ''
      ].join('\n')
    )
    assert.equal(created.status, 201, JSON.stringify(created.body))

    await eventually(
      () => received.length >= 3,
      60_000,
      () => `three events at the sink (got ${received.length}; dispatcher: ${started[1]?.stderr ?? ''})`
    )
    for (const event of received) {
      assert.equal(event.headers['ce-type'], 'dev.knative.sources.ping')
      assert.equal(event.headers['ce-source'], '/apis/v1/namespaces/default/pingsources/from-image')
      assert.equal(event.headers['content-type'], 'application/json')
      assert.equal(event.body, '{"from":"image"}')
    }
    assert.equal(new Set(received.map(e => e.headers['ce-id'])).size, received.length, 'one delivery per tick')
  })
})
