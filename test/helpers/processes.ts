// Shoal as a child process: the command to start, and what it prints.
import type { ChildProcess } from 'node:child_process'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'

/** The `shoal` command (bin/shoal.js), run with `process.execPath`. */
export const shoalBin = fileURLToPath(new URL('../../bin/shoal.js', import.meta.url))

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
