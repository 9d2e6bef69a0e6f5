// Real Shoal processes for the autoscale benchmarks: a controller or dispatcher as a child process, stopped by
// signal; and small HTTP helpers.
import { spawn } from 'node:child_process'
import { createInterface } from 'node:readline'

const bin = new URL('../bin/shoal.js', import.meta.url).pathname
// A benchmark that fails midway leaves no process behind.
const children = new Set<{ kill(signal: NodeJS.Signals): boolean }>()
process.once('exit', () => {
  for (const child of children) child.kill('SIGKILL')
})

export interface Child {
  readonly url: string
  readonly exited: Promise<void>
  kill(signal: NodeJS.Signals): void
}

/** `shoal controller` or `shoal dispatcher` with these arguments; resolves once it says it is up. */
export function startProcess(kind: 'controller' | 'dispatcher', args: readonly string[]): Promise<Child> {
  const child = spawn(process.execPath, [bin, kind, ...args], {
    env: { ...process.env, SHOAL_LOG_LEVEL: 'error' },
    stdio: ['ignore', 'pipe', 'inherit']
  })
  children.add(child)
  const exited = new Promise<void>(resolve => child.once('exit', () => resolve()))
  child.once('exit', () => children.delete(child))
  return new Promise((resolve, reject) => {
    createInterface({ input: child.stdout }).on('line', line => {
      const url = /serving the API on (\S+)/.exec(line)?.[1]
      if (url || (kind === 'dispatcher' && / up\b/.test(line)))
        resolve({ url: url ?? '', exited, kill: s => child.kill(s) })
    })
    child.once('exit', code => reject(new Error(`${kind} exited ${code}`)))
  })
}

export async function getJson<T>(url: string): Promise<T> {
  const response = await fetch(url)
  return (await response.json()) as T
}

export async function post(url: string, body: string): Promise<number> {
  const response = await fetch(url, { method: 'POST', body, headers: { 'content-type': 'application/yaml' } })
  await response.text()
  return response.status
}

export const sleep = (ms: number) => new Promise(resolve => setTimeout(resolve, ms))

export const percentile = (xs: readonly number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!

/** Polls `check` every 50 ms until it returns a value, or throws after `ms`. */
export async function until<T>(what: string, check: () => Promise<T | undefined>, ms = 60_000): Promise<T> {
  const deadline = Date.now() + ms
  for (;;) {
    const value = await check().catch(() => undefined)
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await sleep(50)
  }
}
