import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { parse } from 'yaml'
import { ErrorCodes, ShoalError } from '../errors/index.ts'
import type { FieldError } from '../errors/index.ts'

// The tokens file of `shoal controller --tokens FILE` (docs/security.md): who may call the API, and where.

/** A token bucket: a sustained rate and the burst above it. */
export interface RateLimit {
  readonly requestsPerSecond: number
  readonly burst: number
}

/** The limit of a tenant token that sets none (docs/security.md). Admin and internal tokens are unlimited. */
export const DEFAULT_TENANT_RATE_LIMIT: RateLimit = Object.freeze({ requestsPerSecond: 50, burst: 100 })

/** Who a request is from. */
export type Principal =
  /** Single-tenant mode (no tokens configured): everything is allowed, as before tenants existed. */
  | { readonly kind: 'open' }
  /** Another controller replica, with the internal token: forwarded writes and rebalance calls. */
  | { readonly kind: 'internal' }
  | { readonly kind: 'admin'; readonly name: string; readonly rateLimit?: RateLimit }
  | {
      readonly kind: 'tenant'
      readonly name: string
      readonly namespaces: ReadonlySet<string>
      readonly rateLimit: RateLimit
    }

/** A parsed tokens file: principals by the SHA-256 of their token, and the internal token. */
export interface TokenRegistry {
  readonly byDigest: ReadonlyMap<string, Principal>
  readonly internalToken: string
}

const MIN_TOKEN_LENGTH = 16
const NAMESPACE = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/
const TOKEN_FIELDS = new Set(['name', 'token', 'sha256', 'admin', 'namespaces', 'rateLimit'])
const FILE_FIELDS = new Set(['internalToken', 'rateLimit', 'tokens'])

/** The hex SHA-256 of a token: the form in which tokens are held (and may be written in the file). */
export function tokenDigest(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex')
}

/** Reads and checks a tokens file; SHOAL_CONFIG names every bad field. */
export function loadTokensFile(path: string): TokenRegistry {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (cause) {
    const reason = (cause as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : String(cause)
    throw new ShoalError(ErrorCodes.CONFIG, `tokens file ${path} cannot be read: ${reason}`, { cause })
  }
  let input: unknown
  try {
    input = parse(text, { prettyErrors: true, uniqueKeys: true, maxAliasCount: 10 })
  } catch (cause) {
    throw new ShoalError(ErrorCodes.CONFIG, `tokens file ${path} is not valid YAML: ${(cause as Error).message}`, {
      cause
    })
  }
  return parseTokens(input, `tokens file ${path}`)
}

/** Checks a tokens document (already parsed from YAML or JSON) and returns the registry, frozen. */
export function parseTokens(input: unknown, what = 'tokens'): TokenRegistry {
  const errors: FieldError[] = []
  const report = (path: string, message: string) => errors.push({ path, message })
  if (!isRecord(input)) throw configError(what, [{ path: '(root)', message: 'must be a map with tokens' }])
  for (const key of Object.keys(input)) if (!FILE_FIELDS.has(key)) report(key, 'unknown field')
  const internalToken = input['internalToken']
  if (typeof internalToken !== 'string' || internalToken.length < MIN_TOKEN_LENGTH) {
    report('internalToken', `required: a string of at least ${MIN_TOKEN_LENGTH} characters, shared by every controller`)
  }
  const defaultLimit =
    input['rateLimit'] === undefined ? DEFAULT_TENANT_RATE_LIMIT : rateLimitOf(input['rateLimit'], 'rateLimit', report)
  const byDigest = new Map<string, Principal>()
  const names = new Set<string>()
  const tokens = input['tokens']
  if (!Array.isArray(tokens) || tokens.length === 0) report('tokens', 'required: a list of at least one token')
  else {
    tokens.forEach((entry: unknown, i) => {
      const at = `tokens[${i}]`
      const principal = principalOf(entry, at, defaultLimit, report)
      if (principal === undefined) return
      if (names.has(principal.name)) report(`${at}.name`, `duplicate name "${principal.name}"`)
      names.add(principal.name)
      if (byDigest.has(principal.digest)) report(at, 'the same token is given twice')
      byDigest.set(principal.digest, principal.principal)
    })
  }
  if (typeof internalToken === 'string' && byDigest.has(tokenDigest(internalToken))) {
    report('internalToken', 'must differ from every token in tokens')
  }
  if (errors.length > 0) throw configError(what, errors)
  return Object.freeze({ byDigest, internalToken: internalToken as string })
}

function principalOf(
  entry: unknown,
  at: string,
  defaultLimit: RateLimit | undefined,
  report: (path: string, message: string) => void
): { name: string; digest: string; principal: Principal } | undefined {
  if (!isRecord(entry)) {
    report(at, 'must be a map with name, token (or sha256) and admin or namespaces')
    return undefined
  }
  let ok = true
  const fail = (path: string, message: string) => {
    ok = false
    report(path, message)
  }
  for (const key of Object.keys(entry)) if (!TOKEN_FIELDS.has(key)) fail(`${at}.${key}`, 'unknown field')
  const name = entry['name']
  if (typeof name !== 'string' || name === '') fail(`${at}.name`, 'required: a name for logs and messages')
  const token = entry['token']
  const sha256 = entry['sha256']
  let digest = ''
  if ((token === undefined) === (sha256 === undefined)) {
    fail(`${at}.token`, 'give exactly one of token or sha256')
  } else if (token !== undefined) {
    if (typeof token !== 'string' || token.length < MIN_TOKEN_LENGTH || /\s/.test(token)) {
      fail(`${at}.token`, `must be at least ${MIN_TOKEN_LENGTH} characters without spaces`)
    } else digest = tokenDigest(token)
  } else if (typeof sha256 !== 'string' || !/^[0-9a-fA-F]{64}$/.test(sha256)) {
    fail(`${at}.sha256`, 'must be the hex SHA-256 of the token (64 hex digits)')
  } else digest = sha256.toLowerCase()
  const admin = entry['admin']
  const namespaces = entry['namespaces']
  if (admin !== undefined && typeof admin !== 'boolean') fail(`${at}.admin`, 'must be true or false')
  if (admin === true && namespaces !== undefined) {
    fail(`${at}.namespaces`, 'an admin token sees every namespace: give admin or namespaces, not both')
  }
  const limit = entry['rateLimit'] === undefined ? undefined : rateLimitOf(entry['rateLimit'], `${at}.rateLimit`, fail)
  if (admin === true) {
    if (!ok) return undefined
    const principal: Principal =
      limit === undefined
        ? { kind: 'admin', name: name as string }
        : { kind: 'admin', name: name as string, rateLimit: limit }
    return { name: name as string, digest, principal: Object.freeze(principal) }
  }
  if (!Array.isArray(namespaces) || namespaces.length === 0) {
    fail(`${at}.namespaces`, 'required (a list of namespaces) unless admin is true')
    return undefined
  }
  namespaces.forEach((ns: unknown, j) => {
    if (typeof ns !== 'string' || !NAMESPACE.test(ns)) fail(`${at}.namespaces[${j}]`, 'must be a namespace name')
  })
  if (!ok) return undefined
  const principal: Principal = {
    kind: 'tenant',
    name: name as string,
    namespaces: new Set(namespaces as string[]),
    rateLimit: limit ?? defaultLimit ?? DEFAULT_TENANT_RATE_LIMIT
  }
  return { name: name as string, digest, principal: Object.freeze(principal) }
}

function rateLimitOf(
  value: unknown,
  at: string,
  report: (path: string, message: string) => void
): RateLimit | undefined {
  if (!isRecord(value)) {
    report(at, 'must be a map with requestsPerSecond and burst')
    return undefined
  }
  const rate = value['requestsPerSecond']
  const burst = value['burst'] ?? rate
  let ok = true
  for (const key of Object.keys(value)) {
    if (key !== 'requestsPerSecond' && key !== 'burst') {
      report(`${at}.${key}`, 'unknown field')
      ok = false
    }
  }
  if (typeof rate !== 'number' || !(rate > 0) || !Number.isFinite(rate)) {
    report(`${at}.requestsPerSecond`, 'must be a number above 0')
    ok = false
  }
  if (typeof burst !== 'number' || !(burst >= 1) || !Number.isFinite(burst)) {
    report(`${at}.burst`, 'must be a number of at least 1')
    ok = false
  }
  return ok ? Object.freeze({ requestsPerSecond: rate as number, burst: burst as number }) : undefined
}

function configError(what: string, fields: readonly FieldError[]): ShoalError {
  const detail = fields.map(f => `${f.path}: ${f.message}`).join('; ')
  return new ShoalError(ErrorCodes.CONFIG, `${what} is invalid: ${detail}`, { fields })
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}
