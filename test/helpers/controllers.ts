import { spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { createInterface } from 'node:readline'

export const shoalBin = fileURLToPath(new URL('../../bin/shoal.js', import.meta.url))

/** The broker the test run started (test/setup), as the tests' one source of truth. */
export function brokers(): string {
  const value = process.env['KAFKA_BOOTSTRAP_SERVERS']
  if (!value) throw new Error('KAFKA_BOOTSTRAP_SERVERS is not set: run the tests with `npm test`')
  return value
}

export interface ControllerProcess {
  readonly url: string
  readonly child: ChildProcess
  /** Sends a signal and waits for the process to exit. */
  stop(signal?: NodeJS.Signals): Promise<void>
}

/** Starts `shoal controller` as a real process on a free port and waits until its API answers. */
export async function startControllerProcess(
  prefix: string,
  extra: readonly string[] = []
): Promise<ControllerProcess> {
  const child = spawn(
    process.execPath,
    [shoalBin, 'controller', '--kafka', brokers(), '--port', '0', '--prefix', prefix, '--buckets', '4', ...extra],
    {
      env: { ...process.env, SHOAL_LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe']
    }
  )
  let stderr = ''
  child.stderr.on('data', chunk => (stderr += String(chunk)))
  const exited = new Promise<void>(resolve => child.once('exit', () => resolve()))
  const url = await new Promise<string>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout })
    const timer = setTimeout(() => reject(new Error(`controller did not start in 60 s: ${stderr}`)), 60_000)
    lines.on('line', line => {
      const match = /serving the API on (\S+)/.exec(line)
      if (match) {
        clearTimeout(timer)
        resolve(match[1]!)
      }
    })
    child.once('exit', code => {
      clearTimeout(timer)
      reject(new Error(`controller exited with ${code}: ${stderr}`))
    })
  })
  return {
    url,
    child,
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal)
      // A process that does not stop within 20 s is killed, so one slow shutdown cannot hang the suite.
      const timer = setTimeout(() => child.kill('SIGKILL'), 20_000)
      await exited
      clearTimeout(timer)
    }
  }
}

/** Polls `check` until it returns a value other than undefined, or fails after `timeoutMs`. */
export async function eventually<T>(
  check: () => Promise<T | undefined>,
  timeoutMs = 30_000,
  what = 'condition'
): Promise<T> {
  const deadline = Date.now() + timeoutMs
  let last: string | undefined
  for (;;) {
    try {
      const value = await check()
      if (value !== undefined) return value
    } catch (error) {
      last = String(error)
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last === undefined ? '' : `: ${last}`}`)
    await new Promise(resolve => setTimeout(resolve, 100))
  }
}

export function uniquePrefix(name: string): string {
  return `t-${name}-${process.pid}-${Math.random().toString(36).slice(2, 8)}`
}

export interface HttpAnswer {
  readonly status: number
  readonly body: any // eslint-disable-line @typescript-eslint/no-explicit-any -- JSON under test
}

export async function http(
  method: string,
  url: string,
  body?: string,
  contentType = 'application/yaml'
): Promise<HttpAnswer> {
  const response = await fetch(url, {
    method,
    ...(body === undefined ? {} : { body, headers: { 'content-type': contentType } })
  })
  const text = await response.text()
  let parsed: unknown = text
  try {
    parsed = JSON.parse(text)
  } catch {
    // plain text answers (healthz)
  }
  return { status: response.status, body: parsed }
}

/** What a child process prints as it arrives — stdout by line, stderr whole — and its exit code once it exits. */
export function captureOutput(child: ChildProcess): {
  readonly lines: string[]
  readonly stderr: string
  readonly exited: Promise<number | null>
} {
  const lines: string[] = []
  let stderr = ''
  child.stderr!.on('data', chunk => (stderr += String(chunk)))
  createInterface({ input: child.stdout! }).on('line', line => lines.push(line))
  const exited = new Promise<number | null>(resolve => child.once('exit', code => resolve(code)))
  return {
    lines,
    get stderr() {
      return stderr
    },
    exited
  }
}

/** One controller replica as `GET /internal/v1/controllers` shows it. */
export interface Replica {
  replicaId: string
  url: string
  generation: number
  leader: boolean
}

/** The replicas of the newest group generation, as the controller at `url` sees them. */
export async function replicas(url: string): Promise<Replica[]> {
  const view = (await http('GET', `${url}/internal/v1/controllers`)).body as { replicas: Replica[] }
  const newest = Math.max(...view.replicas.map(r => r.generation))
  return view.replicas.filter(r => r.generation === newest)
}

/**
 * Sets a KafkaSource's `spec.consumers` as `shoal scale` does: reads it, changes the count, writes it back with the
 * resourceVersion read (again on a conflict).
 */
export async function scaleKafkaSource(api: string, name: string, consumers: number): Promise<void> {
  const url = `${api}/apis/sources.knative.dev/v1beta1/namespaces/default/kafkasources/${name}`
  for (let attempt = 0; ; attempt++) {
    const current = await http('GET', url)
    if (current.status !== 200) throw new Error(`reading ${name}: ${current.status} ${JSON.stringify(current.body)}`)
    const body = { ...current.body, spec: { ...current.body.spec, consumers } }
    const answer = await http('PUT', url, JSON.stringify(body), 'application/json')
    if (answer.status === 409 && attempt < 10) continue
    if (answer.status !== 200) throw new Error(`scaling ${name}: ${answer.status} ${JSON.stringify(answer.body)}`)
    return
  }
}
