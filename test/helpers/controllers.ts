// Shoal controllers for tests: a real `shoal controller` process, and what its API shows of the controller group.
import { spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { createInterface } from 'node:readline'
import { http } from './http.ts'
import { brokers } from './kafka.ts'
import { shoalBin } from './processes.ts'

export interface ControllerProcess {
  readonly url: string
  readonly child: ChildProcess
  /** What the process has written to stderr so far (its log at the warn level). */
  readonly stderr: string
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
    [
      shoalBin,
      'controller',
      '--kafka',
      brokers().join(','),
      '--port',
      '0',
      '--prefix',
      prefix,
      '--buckets',
      '4',
      ...extra
    ],
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
    get stderr() {
      return stderr
    },
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal)
      // A process that does not stop within 20 s is killed, so one slow shutdown cannot hang the suite.
      const timer = setTimeout(() => child.kill('SIGKILL'), 20_000)
      await exited
      clearTimeout(timer)
    }
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
