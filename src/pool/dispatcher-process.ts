import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import type { DispatcherChild } from './supervisor.ts'

const shoalBin = fileURLToPath(new URL('../../bin/shoal.js', import.meta.url))

export interface DispatcherProcessOptions {
  readonly brokers: readonly string[]
  readonly id: string
  readonly zone: string
  readonly node: string
  readonly capacity: number
  readonly prefix?: string
  /** More `shoal dispatcher` flags. */
  readonly args?: readonly string[]
  /** More environment (`SHOAL_SERVICE_URL_TEMPLATE`, …) on top of this process's. */
  readonly env?: Readonly<Record<string, string>>
  /** Where the process's stderr (its warnings and errors) goes, line by line. */
  readonly onStderr?: (text: string) => void
}

/** Starts `shoal dispatcher` as a child process of this Node.js, with this Node.js. */
export function spawnDispatcher(options: DispatcherProcessOptions): DispatcherChild {
  const args = [
    shoalBin,
    'dispatcher',
    '--kafka',
    options.brokers.join(','),
    '--id',
    options.id,
    '--zone',
    options.zone,
    '--node',
    options.node,
    '--capacity',
    String(options.capacity),
    ...(options.prefix === undefined ? [] : ['--prefix', options.prefix]),
    ...(options.args ?? [])
  ]
  const child = spawn(process.execPath, args, {
    env: { ...process.env, SHOAL_LOG_LEVEL: process.env['SHOAL_LOG_LEVEL'] ?? 'warn', ...options.env },
    stdio: ['ignore', 'ignore', 'pipe']
  })
  child.stderr.setEncoding('utf8')
  child.stderr.on('data', (text: string) => options.onStderr?.(text))
  const exited = new Promise<number | null>(resolve => {
    child.once('exit', code => resolve(code))
    // A process that could not be spawned at all.
    child.once('error', () => resolve(-1))
  })
  return {
    exited,
    kill: signal => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal)
    }
  }
}
