import { execFile, spawn } from 'node:child_process'
import { closeSync, fstatSync, openSync, readSync } from 'node:fs'
import { ErrorCodes, ShoalError } from '../../errors/index.ts'

/** How a Java process ended. */
export interface ProcessExit {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
}

/** One running Java process of the embedded Kafka. */
export interface JavaProcess {
  readonly pid: number
  readonly exited: Promise<ProcessExit>
  readonly running: boolean
  kill(signal: NodeJS.Signals): void
}

export interface LaunchOptions {
  readonly java: string
  readonly libs: string
  /** Working directory. */
  readonly cwd: string
  /** Java's own stdout and stderr (JVM errors, log4j status lines) are appended here. */
  readonly stdoutFile: string
  readonly log4jConfigFile: string
  readonly mainClass: string
  readonly args: readonly string[]
  readonly env?: NodeJS.ProcessEnv
}

const live = new Set<JavaProcess>()
let exitHookInstalled = false

// If this Node.js process exits without stopping its brokers (an uncaught error, process.exit), kill them:
// a Java broker left behind holds its ports and data directory forever.
function installExitHook(): void {
  if (exitHookInstalled) return
  exitHookInstalled = true
  process.on('exit', () => {
    for (const child of live) child.kill('SIGKILL')
  })
}

// Runs java through a tiny shell that first starts a watcher on its stdin pipe, then execs java (same pid).
// The pipe's other end is held only by this Node.js process, so when it dies, even by SIGKILL, the watcher
// reads EOF and kills java: no orphan brokers. The watcher ignores SIGINT (a background job of a
// non-interactive shell), so Ctrl-C still reaches java itself and shuts it down cleanly.
const WATCHDOG = 'exec 3<&0; (cat <&3 >/dev/null 2>&1; kill -KILL $$ 2>/dev/null) & exec "$@" 3<&- </dev/null'

/** Heap of each broker unless KAFKA_HEAP_OPTS says otherwise. */
export const DEFAULT_HEAP_OPTS = '-Xms128m -Xmx512m'
/**
 * GC and JIT flags unless KAFKA_JVM_PERFORMANCE_OPTS says otherwise. C1 only (TieredStopAtLevel=1): three JVMs
 * starting together on two cores are ready in about half the time, and a development broker never needs C2's
 * peak throughput. Benchmarks set KAFKA_JVM_PERFORMANCE_OPTS='-XX:+UseG1GC -XX:MaxGCPauseMillis=20'.
 */
export const DEFAULT_PERFORMANCE_OPTS = '-XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:TieredStopAtLevel=1'

/** JVM options, honouring KAFKA_HEAP_OPTS, KAFKA_JVM_PERFORMANCE_OPTS and KAFKA_OPTS as Kafka's scripts do. */
export function jvmOptions(env: NodeJS.ProcessEnv, log4jConfigFile: string): string[] {
  const words = (value: string): string[] => value.split(/\s+/).filter(Boolean)
  return [
    ...words(env.KAFKA_HEAP_OPTS ?? DEFAULT_HEAP_OPTS),
    ...words(env.KAFKA_JVM_PERFORMANCE_OPTS ?? DEFAULT_PERFORMANCE_OPTS),
    '-XX:+ExitOnOutOfMemoryError',
    '-Djava.awt.headless=true',
    `-Dlog4j2.configurationFile=${log4jConfigFile}`,
    ...words(env.KAFKA_OPTS ?? '')
  ]
}

/** Starts a Kafka main class on the jars in `libs`; its output goes to `stdoutFile`. */
export function launchJava(options: LaunchOptions): JavaProcess {
  installExitHook()
  const env = options.env ?? process.env
  const out = openSync(options.stdoutFile, 'a')
  let child
  try {
    child = spawn(
      'sh',
      [
        '-c',
        WATCHDOG,
        'shoal-kafka',
        options.java,
        ...jvmOptions(env, options.log4jConfigFile),
        '-cp',
        `${options.libs}/*`,
        options.mainClass,
        ...options.args
      ],
      // A process group of its own: Ctrl-C in a terminal signals the foreground group, and the broker must
      // outlive that signal until Shoal has stopped what uses it (dispatchers drain and commit, controllers
      // leave) and stops it last. The watchdog still ends it if Shoal dies without stopping it.
      { cwd: options.cwd, env, stdio: ['pipe', out, out], detached: true }
    )
  } finally {
    closeSync(out)
  }
  const pid = child.pid
  if (pid === undefined) throw new ShoalError(ErrorCodes.KAFKA_START, `could not start ${options.java}`)
  let running = true
  const exited = new Promise<ProcessExit>(resolve => {
    child.once('exit', (code, signal) => {
      running = false
      live.delete(handle)
      resolve({ code, signal })
    })
  })
  const handle: JavaProcess = {
    pid,
    exited,
    get running() {
      return running
    },
    kill(signal) {
      if (running) child.kill(signal)
    }
  }
  live.add(handle)
  return handle
}

/** Runs a Kafka tool class to completion; resolves with its exit code and output. */
export function runJavaTool(
  options: Omit<LaunchOptions, 'stdoutFile' | 'cwd'> & { readonly signal?: AbortSignal }
): Promise<{ code: number; output: string }> {
  const env = options.env ?? process.env
  return new Promise((resolve, reject) => {
    execFile(
      options.java,
      [...jvmOptions(env, options.log4jConfigFile), '-cp', `${options.libs}/*`, options.mainClass, ...options.args],
      { env, timeout: 120_000, maxBuffer: 4 * 1024 * 1024, ...(options.signal ? { signal: options.signal } : {}) },
      (error, stdout, stderr) => {
        if (error && typeof error.code !== 'number') {
          // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- an ExecFileException is an Error; its type is an Omit<> of one
          reject(error)
          return
        }
        resolve({ code: typeof error?.code === 'number' ? error.code : 0, output: `${stdout}${stderr}` })
      }
    )
  })
}

/** The last `lines` lines of a text file, reading at most its last 64 KiB ('' if it cannot be read). */
export function tailFile(path: string, lines = 40): string {
  let fd
  try {
    fd = openSync(path, 'r')
  } catch {
    return ''
  }
  try {
    const size = fstatSync(fd).size
    const length = Math.min(size, 64 * 1024)
    const buffer = Buffer.alloc(length)
    readSync(fd, buffer, 0, length, size - length)
    return buffer.toString('utf8').trimEnd().split('\n').slice(-lines).join('\n')
  } finally {
    closeSync(fd)
  }
}
