import { readFileSync } from 'node:fs'
import { rootCertificates } from 'node:tls'
import { Agent } from 'undici'
import { ErrorCodes, ShoalError } from '../errors/index.ts'

/** The API's TLS material: served certificate chain and key, and the CAs peers are trusted by. */
export interface ApiTls {
  readonly cert: string
  readonly key: string
  /** PEM CAs (besides the system's) that the other replicas' certificates are checked against. */
  readonly ca: readonly string[]
}

/**
 * Reads `--tls-cert`, `--tls-key` and the optional `--tls-ca`. Replicas trust the system's CAs, the CA file,
 * and the served certificate itself (so replicas sharing one self-signed certificate trust each other).
 */
export function loadApiTls(certPath: string, keyPath: string, caPath?: string): ApiTls {
  const read = (flag: string, path: string) => {
    try {
      return readFileSync(path, 'utf8')
    } catch (cause) {
      throw new ShoalError(ErrorCodes.USAGE, `${flag} ${path} cannot be read: ${(cause as Error).message}`, { cause })
    }
  }
  const cert = read('--tls-cert', certPath)
  const key = read('--tls-key', keyPath)
  if (!cert.includes('-----BEGIN CERTIFICATE-----')) {
    throw new ShoalError(ErrorCodes.USAGE, `--tls-cert ${certPath} holds no PEM certificate`)
  }
  if (!/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(key)) {
    throw new ShoalError(ErrorCodes.USAGE, `--tls-key ${keyPath} holds no PEM private key`)
  }
  const ca = caPath === undefined ? [cert] : [read('--tls-ca', caPath), cert]
  return Object.freeze({ cert, key, ca: Object.freeze(ca) })
}

/** An undici dispatcher for calls between replicas over TLS: trusts the system CAs plus `tls.ca`. */
export function peerAgent(tls: ApiTls): Agent {
  return new Agent({ connect: { ca: [...rootCertificates, ...tls.ca] } })
}
