import { DEFAULT_SERVICE_URL_TEMPLATE } from '../api/index.ts'
import { SinkPolicy, parseCidrList } from '../delivery/index.ts'
import { ErrorCodes, ShoalError } from '../errors/index.ts'
import { ApiGuard } from './api-guard.ts'
import { loadApiTls } from './tls.ts'
import type { ApiTls } from './tls.ts'
import { loadTokensFile } from './tokens.ts'

/** The security flags of `shoal controller`. */
export interface SecurityFlags {
  readonly tokens?: string | undefined
  readonly 'forbidden-sink-cidrs'?: string | undefined
  readonly 'tls-cert'?: string | undefined
  readonly 'tls-key'?: string | undefined
  readonly 'tls-ca'?: string | undefined
  readonly 'service-url-template'?: string | undefined
}

export interface ControllerSecurity {
  readonly guard: ApiGuard
  readonly tls?: ApiTls
  /** One line for the operator: single- or multi-tenant, and over what. */
  readonly mode: string
  /** Tells the sink policy where Shoal's own API endpoints are, once the controller listens. */
  ownEndpoints(endpoints: () => readonly string[]): void
}

/** Reads the tokens file and TLS material the flags name; SHOAL_USAGE or SHOAL_CONFIG when they are wrong. */
export function controllerSecurity(flags: SecurityFlags, prefix = 'shoal'): ControllerSecurity {
  const certPath = flags['tls-cert']
  const keyPath = flags['tls-key']
  if ((certPath === undefined) !== (keyPath === undefined)) {
    throw new ShoalError(ErrorCodes.USAGE, '--tls-cert and --tls-key go together')
  }
  if (flags['tls-ca'] !== undefined && certPath === undefined) {
    throw new ShoalError(ErrorCodes.USAGE, '--tls-ca needs --tls-cert and --tls-key')
  }
  const tls =
    certPath === undefined || keyPath === undefined ? undefined : loadApiTls(certPath, keyPath, flags['tls-ca'])
  const tokens = flags.tokens === undefined ? undefined : loadTokensFile(flags.tokens)
  if (tokens === undefined && flags['forbidden-sink-cidrs'] !== undefined) {
    throw new ShoalError(ErrorCodes.USAGE, '--forbidden-sink-cidrs applies in multi-tenant mode: give --tokens too')
  }
  const cidrs = parseCidrList(flags['forbidden-sink-cidrs'])
  let endpoints: () => readonly string[] = () => []
  let sinkPolicy: SinkPolicy
  try {
    sinkPolicy = new SinkPolicy({ forbiddenCidrs: cidrs, ownEndpoints: () => endpoints() })
  } catch (error) {
    throw new ShoalError(ErrorCodes.USAGE, `--forbidden-sink-cidrs: ${(error as Error).message}`)
  }
  const guard = new ApiGuard({
    ...(tokens === undefined ? {} : { tokens }),
    prefix,
    serviceUrlTemplate: flags['service-url-template'] ?? DEFAULT_SERVICE_URL_TEMPLATE,
    sinkPolicy
  })
  const over = tls === undefined ? 'HTTP' : 'HTTPS'
  const mode =
    tokens === undefined
      ? `single-tenant mode: no --tokens given, the API (${over}) is open to every caller`
      : `multi-tenant mode: ${tokens.byDigest.size} token(s) from ${flags.tokens}, API over ${over}, sinks in ${sinkPolicy.forbiddenCidrs.join(', ') || 'no range'} refused`
  return {
    guard,
    ...(tls === undefined ? {} : { tls }),
    mode,
    ownEndpoints(next) {
      endpoints = next
    }
  }
}
