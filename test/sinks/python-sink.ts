// The Python standard-library sink (test/sinks/python_sink.py: the CloudEvents SDK over ThreadingHTTPServer, listen
// backlog 5) as tests and benchmarks start it. The SDK is installed into the cache by scripts/setup-test.sh.
import { execFileSync, spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import type { ChildProcess } from 'node:child_process'
import { homedir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'

const script = new URL('./python_sink.py', import.meta.url).pathname
const PYTHONPATH = join(process.env['SHOAL_CACHE_DIR'] ?? join(homedir(), '.cache', 'shoal'), 'python')
const setupTest = new URL('../../scripts/setup-test.sh', import.meta.url).pathname

/** The SDK, installed on first use (a benchmark on a new machine that never ran `npm test`), Python packages only. */
function ensureSdk(): void {
  if (existsSync(join(PYTHONPATH, '.shoal-cloudevents'))) return
  execFileSync('bash', [setupTest, '--python'], { stdio: ['ignore', 'inherit', 'inherit'] })
}

/**
 * An event the sink answered (with `--print-data`, also its data as text and the sender's address); or, with
 * `--trace`, one that arrived, with its attributes and extensions.
 */
export type PythonSinkLine =
  | {
      readonly kind: 'answered'
      readonly id: string
      readonly offset: string
      readonly data?: string | undefined
      readonly peer?: string | undefined
    }
  | { readonly kind: 'arrived'; readonly attributes: Readonly<Record<string, string>> }

export interface PythonSink {
  readonly url: string
  readonly child: ChildProcess
  stop(): Promise<void>
}

/** Starts the sink with `args` (see the script's help); `onLine` hears each event line as it is printed. */
export async function startPythonSink(
  args: readonly string[],
  onLine: (line: PythonSinkLine) => void
): Promise<PythonSink> {
  ensureSdk()
  const child = spawn('python3', [script, ...args], {
    env: { ...process.env, PYTHONPATH },
    stdio: ['ignore', 'pipe', 'inherit']
  })
  const exited = new Promise<void>(resolve => child.once('exit', () => resolve()))
  const lines = createInterface({ input: child.stdout })
  const port = await new Promise<number>((resolve, reject) => {
    child.once('exit', code => reject(new Error(`the Python sink exited (${code}) before listening`)))
    lines.on('line', line => {
      if (line.startsWith('listening ')) return resolve(Number(line.slice('listening '.length)))
      const fields = line.split('\t')
      if (fields[0] === '>') onLine({ kind: 'arrived', attributes: JSON.parse(fields[1]!) as Record<string, string> })
      else onLine({ kind: 'answered', id: fields[0]!, offset: fields[1] ?? '-', data: fields[2], peer: fields[3] })
    })
  })
  const host = args.includes('--host') ? args[args.indexOf('--host') + 1] : '127.0.0.1'
  return {
    url: `${args.includes('--tls-cert') ? 'https' : 'http'}://${host}:${port}/`,
    child,
    async stop() {
      child.kill('SIGKILL')
      await exited
    }
  }
}
