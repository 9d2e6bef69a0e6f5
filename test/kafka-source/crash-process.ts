// The dispatcher-like process of the crash tests (fixtures/crash-runner.ts), started and read.
import { spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { brokers } from '../helpers/kafka.ts'

const fixture = fileURLToPath(new URL('./fixtures/crash-runner.ts', import.meta.url))

export interface CrashProcess {
  readonly child: ChildProcess
  /** The values of the records it printed handled, as they come. */
  readonly handled: Set<string>
  /** SIGKILLs it; resolves once it has closed (what it printed before is read). */
  kill(): Promise<void>
}

/**
 * Starts a process running one SourceRunner of two members on `topic` as `dispatcherId`, each delivery taking
 * `deliveryMs`. Its lines are read until 'close', not 'exit': those printed before a kill may still be in the pipe
 * when it exits, and a record it handled and committed but never read would never be counted. (Its log on stderr is
 * read too, or the pipe would never close.)
 */
export function startCrashProcess(topic: string, dispatcherId: string, deliveryMs = 20): CrashProcess {
  const child = spawn(process.execPath, [fixture, brokers().join(','), topic, dispatcherId, String(deliveryMs)], {
    stdio: ['ignore', 'pipe', 'pipe']
  })
  child.stderr.resume()
  const closed = new Promise<void>(resolve => child.once('close', () => resolve()))
  const handled = new Set<string>()
  createInterface({ input: child.stdout }).on('line', line => {
    const [, , , value] = line.split(' ')
    if (value) handled.add(value)
  })
  return {
    child,
    handled,
    async kill() {
      child.kill('SIGKILL')
      await closed
    }
  }
}
