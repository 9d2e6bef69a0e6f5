import { spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { createInterface } from 'node:readline'
import { brokers } from './kafka.ts'
import { shoalBin } from './processes.ts'

export interface DispatcherProcess {
  readonly id: string
  readonly child: ChildProcess
  /** `http://…/metrics` when started with `--metrics-port`. */
  readonly metricsUrl: string | undefined
  /** What the process has written to stderr so far (its log at the level it was started with). */
  readonly stderr: string
  stop(signal?: NodeJS.Signals): Promise<void>
}

/** Starts `shoal dispatcher` as a real process and waits until it says it is up. */
export async function startDispatcherProcess(
  prefix: string,
  id: string,
  zone: string,
  node: string,
  capacity: number,
  extra: readonly string[] = [],
  options: { readonly kafka?: string; readonly logLevel?: string; readonly env?: Readonly<Record<string, string>> } = {}
): Promise<DispatcherProcess> {
  const args = [
    shoalBin,
    'dispatcher',
    '--kafka',
    options.kafka ?? brokers().join(','),
    '--prefix',
    prefix,
    '--id',
    id,
    '--zone',
    zone,
    '--node',
    node,
    '--capacity',
    String(capacity),
    ...extra
  ]
  const child = spawn(process.execPath, args, {
    env: { ...process.env, SHOAL_LOG_LEVEL: options.logLevel ?? 'warn', ...options.env },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let stderr = ''
  child.stderr.on('data', chunk => (stderr += String(chunk)))
  const exited = new Promise<void>(resolve => child.once('exit', () => resolve()))
  const up = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`dispatcher ${id} did not start in 60 s: ${stderr}`)), 60_000)
    createInterface({ input: child.stdout }).on('line', line => {
      if (/ up\b/.test(line)) {
        clearTimeout(timer)
        resolve(line)
      }
    })
    child.once('exit', code => {
      clearTimeout(timer)
      reject(new Error(`dispatcher ${id} exited with ${code}: ${stderr}`))
    })
  })
  return {
    id,
    child,
    metricsUrl: / metrics at (\S+)/.exec(up)?.[1],
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

/**
 * Starts `dispatcher-0` … `dispatcher-{count-1}` as processes in zones a, b, c, … (node `<zone>-1`), one at a
 * time, each put into `into` as soon as it is up, so the caller's clean-up stops those that started.
 */
export async function startZonedDispatchers(
  prefix: string,
  into: Map<string, DispatcherProcess>,
  count: number,
  capacity: number,
  extra: readonly string[] = []
): Promise<void> {
  for (let i = 0; i < count; i++) {
    const zone = String.fromCharCode(97 + i)
    into.set(
      `dispatcher-${i}`,
      await startDispatcherProcess(prefix, `dispatcher-${i}`, zone, `${zone}-1`, capacity, extra)
    )
  }
}
