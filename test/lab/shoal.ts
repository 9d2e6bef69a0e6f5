// `shoal controller` and `shoal dispatcher` as real processes on the lab's hosts: each inside its host's
// namespace, bound to the host's address (the controller's API with --host; a dispatcher's /metrics listens on
// its host, which has no other address than the lab's and loopback), reaching Kafka at the brokers' addresses.

import type { ChildProcess } from 'node:child_process'
import { appendFileSync, mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import { createInterface } from 'node:readline'
import { shoalBin } from '../helpers/processes.ts'
import type { LabHost } from './net.ts'
import { spawnOn } from './lab.ts'

export const API_PORT = 8080
export const METRICS_PORT = 9100

/** A Shoal process on a lab host. */
export interface LabProcess {
  readonly host: LabHost
  readonly child: ChildProcess
  readonly pid: number
  /** Everything it wrote to stderr so far (its log, JSON lines). */
  readonly stderr: string
  /** Sends a signal (SIGTERM by default) and waits for the exit; SIGKILL after 20 s. */
  stop(signal?: NodeJS.Signals): Promise<void>
}

export interface LabController extends LabProcess {
  /** `http://<address>:8080`. */
  readonly url: string
}

export interface LabDispatcher extends LabProcess {
  readonly id: string
  /** `http://<address>:9100/metrics`. */
  readonly metricsUrl: string
}

/** How a Shoal process is started: its log level, and a file its stdout and stderr are appended to. */
export interface StartOptions {
  readonly logLevel?: string
  readonly logFile?: string
}

function startOn(host: LabHost, args: readonly string[], ready: RegExp, what: string, options: StartOptions) {
  const child = spawnOn(host, process.execPath, [shoalBin, ...args], {
    env: { ...process.env, SHOAL_LOG_LEVEL: options.logLevel ?? 'warn' }
  })
  const file = options.logFile
  if (file !== undefined) mkdirSync(dirname(file), { recursive: true })
  let stderr = ''
  child.stderr!.on('data', chunk => {
    stderr += String(chunk)
    if (file !== undefined) appendFileSync(file, chunk)
  })
  if (file !== undefined) child.stdout!.on('data', chunk => appendFileSync(file, chunk))
  const exited = new Promise<void>(resolve => child.once('exit', () => resolve()))
  const up = new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${what} on ${host.name} did not start in 60 s: ${stderr}`)),
      60_000
    )
    createInterface({ input: child.stdout! }).on('line', line => {
      if (ready.test(line)) {
        clearTimeout(timer)
        resolve(line)
      }
    })
    child.once('exit', code => {
      clearTimeout(timer)
      reject(new Error(`${what} on ${host.name} exited with ${code}: ${stderr}`))
    })
  })
  const process_: LabProcess = {
    host,
    child,
    pid: child.pid!,
    get stderr() {
      return stderr
    },
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) {
        // A paused process would hold a SIGTERM until it is continued.
        if (signal !== 'SIGKILL') child.kill('SIGCONT')
        child.kill(signal)
      }
      const timer = setTimeout(() => child.kill('SIGKILL'), 20_000)
      await exited
      clearTimeout(timer)
    }
  }
  return { process: process_, up }
}

/** Starts `shoal controller` on the host, its API on `<address>:8080`; resolves once it serves. */
export async function startLabController(
  host: LabHost,
  kafka: string,
  prefix: string,
  extra: readonly string[] = [],
  options: StartOptions = {}
): Promise<LabController> {
  const { process: p, up } = startOn(
    host,
    [
      'controller',
      '--kafka',
      kafka,
      '--host',
      host.address,
      '--port',
      String(API_PORT),
      '--prefix',
      prefix,
      '--buckets',
      '4',
      '--id',
      host.name,
      ...extra
    ],
    /serving the API on /,
    'shoal controller',
    options
  )
  await up.catch(async error => {
    await p.stop('SIGKILL')
    throw error
  })
  return Object.assign(p, { url: `http://${host.address}:${API_PORT}` })
}

/** Starts `shoal dispatcher` on the host (its zone, node = host name), /metrics on `<address>:9100`. */
export async function startLabDispatcher(
  host: LabHost,
  kafka: string,
  prefix: string,
  id: string,
  capacity: number,
  extra: readonly string[] = [],
  options: StartOptions = {}
): Promise<LabDispatcher> {
  if (host.zone === undefined) throw new Error(`dispatcher host ${host.name} has no zone`)
  const { process: p, up } = startOn(
    host,
    [
      'dispatcher',
      '--kafka',
      kafka,
      '--prefix',
      prefix,
      '--id',
      id,
      '--zone',
      host.zone,
      '--node',
      host.name,
      '--capacity',
      String(capacity),
      '--metrics-port',
      String(METRICS_PORT),
      ...extra
    ],
    / up\b/,
    `shoal dispatcher ${id}`,
    options
  )
  await up.catch(async error => {
    await p.stop('SIGKILL')
    throw error
  })
  return Object.assign(p, { id, metricsUrl: `http://${host.address}:${METRICS_PORT}/metrics` })
}
