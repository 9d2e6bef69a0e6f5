import { parseArgs } from 'node:util'
import type { ParseArgsOptionsConfig } from 'node:util'
import { ErrorCodes, ShoalError } from '../errors/index.ts'
import { notADuration, parseDuration } from '../util/index.ts'
import type { CliIo } from './io.ts'

export const defaultServer = 'http://127.0.0.1:8080'
export const defaultNamespace = 'default'
const defaultTimeoutMs = 30_000

/** A wrong command line: printed as `error: …` and exit code 2. */
export function usageError(message: string): ShoalError {
  return new ShoalError(ErrorCodes.USAGE, message)
}

/** Flags every command that talks to the API takes. */
export const connectionFlags = {
  server: { type: 'string', short: 's' },
  'request-timeout': { type: 'string' },
  token: { type: 'string' },
  'certificate-authority': { type: 'string' },
  help: { type: 'boolean', short: 'h' }
} as const satisfies ParseArgsOptionsConfig

/** Strict parsing whose mistakes become usage errors naming the flag, not Node's TypeError. */
export function parseFlags<O extends ParseArgsOptionsConfig>(args: readonly string[], options: O) {
  try {
    return parseArgs<{ args: string[]; options: O; allowPositionals: true; strict: true }>({
      args: [...args],
      options,
      allowPositionals: true,
      strict: true
    })
  } catch (error) {
    throw usageError(describeParseError(error))
  }
}

function describeParseError(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error)
  const code = (error as { code?: unknown }).code
  const quoted = /'([^']+)'/.exec(message)?.[1]
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' && quoted !== undefined) return `unknown flag: ${quoted}`
  if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' && quoted !== undefined) {
    const flag = quoted.replace(/ <value>$/, '')
    return message.includes('argument missing')
      ? `flag needs an argument: ${flag}`
      : `flag ${flag} does not take an argument`
  }
  return message.charAt(0).toLowerCase() + message.slice(1)
}

/** Where the API is and how long to wait for it. */
export interface Connection {
  readonly server: string
  /** 0 = no limit. */
  readonly timeoutMs: number
  /** Bearer token (`--token`, SHOAL_TOKEN) for a multi-tenant API. */
  readonly token?: string
  /** PEM file of the CA that signed the API's certificate (`--certificate-authority`, SHOAL_CA). */
  readonly caFile?: string
}

export function connectionFrom(
  values: {
    readonly server?: string | undefined
    readonly 'request-timeout'?: string | undefined
    readonly token?: string | undefined
    readonly 'certificate-authority'?: string | undefined
  },
  io: CliIo
): Connection {
  const raw = values.server ?? nonEmpty(io.env['SHOAL_SERVER']) ?? defaultServer
  const token = nonEmpty(values.token) ?? nonEmpty(io.env['SHOAL_TOKEN'])
  const caFile = nonEmpty(values['certificate-authority']) ?? nonEmpty(io.env['SHOAL_CA'])
  if (token !== undefined && /\s/.test(token)) throw usageError('--token must not contain spaces')
  return {
    server: normaliseServer(raw),
    timeoutMs: parseTimeout(values['request-timeout']),
    ...(token === undefined ? {} : { token }),
    ...(caFile === undefined ? {} : { caFile })
  }
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value.trim()
}

/** `localhost:8080` → `http://localhost:8080`; rejects what is not an http(s) URL. */
export function normaliseServer(raw: string): string {
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(raw) ? raw : `http://${raw}`
  let url: URL
  try {
    url = new URL(withScheme)
  } catch {
    throw usageError(`invalid server URL "${raw}"`)
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw usageError(`invalid server URL "${raw}": only http and https are supported`)
  }
  return url.href.replace(/\/+$/, '')
}

/** `--request-timeout`: `30s`, `1m`, `500ms`, or a plain number of seconds; `0` waits forever. */
export function parseTimeout(raw: string | undefined): number {
  if (raw === undefined) return defaultTimeoutMs
  const ms = parseDuration(raw, 'seconds')
  if (ms === undefined) throw usageError(notADuration('--request-timeout', raw, 'seconds'))
  return ms
}

/** `-n`, or `default`; checked as a DNS label so a typo fails here, not as a 404. */
export function namespaceFrom(value: string | undefined): string {
  const namespace = value ?? defaultNamespace
  if (!/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(namespace)) {
    throw usageError(`invalid namespace "${namespace}": a lowercase RFC 1123 label is expected`)
  }
  return namespace
}
