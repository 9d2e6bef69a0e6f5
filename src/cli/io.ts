import { text } from 'node:stream/consumers'

/** Where a command reads and writes; tests pass their own to capture output without touching `process`. */
export interface CliIo {
  readonly stdout: { write(text: string): unknown }
  readonly stderr: { write(text: string): unknown }
  /** The whole of standard input, for `-f -`. */
  readonly readStdin: () => Promise<string>
  readonly env: Readonly<Record<string, string | undefined>>
  /** Milliseconds since the epoch; AGE columns are relative to it. */
  readonly now: () => number
  /** Aborts every request in flight (Ctrl-C). */
  readonly signal?: AbortSignal
}

/** The real process's streams and environment. */
export function processIo(): CliIo {
  // `shoal get … | head` closes the pipe early; that is not an error worth a stack trace.
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EPIPE') throw error
    })
  }
  return {
    stdout: process.stdout,
    stderr: process.stderr,
    readStdin: () => text(process.stdin),
    env: process.env,
    now: () => Date.now()
  }
}
