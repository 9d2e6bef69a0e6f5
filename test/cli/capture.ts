import type { CliIo } from '../../src/cli/io.ts'

/** A CliIo that records what a command prints. */
export function captureIo(options: { stdin?: string; env?: Record<string, string>; now?: number } = {}) {
  let stdout = ''
  let stderr = ''
  const io: CliIo = {
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
    readStdin: async () => options.stdin ?? '',
    env: options.env ?? {},
    now: () => options.now ?? Date.now()
  }
  return {
    io,
    stdout: () => stdout,
    stderr: () => stderr
  }
}
