import { createHmac, randomBytes } from 'node:crypto'
import type { ConnectionOptions as TlsConnectionOptions } from 'node:tls'

/** The SASL mechanisms Shoal offers a source's brokers (Knative's `net.sasl.type`). */
export const SaslMechanisms = ['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512'] as const
export type SaslMechanism = (typeof SaslMechanisms)[number]

/**
 * How a client authenticates to a KafkaSource's brokers, resolved from the source's `spec.net` and its
 * Secrets (src/secrets). Absent: PLAINTEXT. It holds credentials: never log it, never write it anywhere.
 */
export interface KafkaClientSecurity {
  readonly sasl?: { readonly mechanism: SaslMechanism; readonly username: string; readonly password: string }
  /** TLS to the brokers; `ca` (PEM) replaces the system's CAs when given; `cert` + `key` for a client certificate. */
  readonly tls?: { readonly ca?: string; readonly cert?: string; readonly key?: string }
}

/** The `sasl` and `tls` options of a @platformatic/kafka client (Admin, Consumer, Producer). */
export interface KafkaSecurityOptions {
  sasl?: { mechanism: SaslMechanism; username: string; password: string }
  tls?: TlsConnectionOptions
}

/** Client options for `security`: spread them into a client's constructor options. */
export function kafkaSecurityOptions(security: KafkaClientSecurity | undefined): KafkaSecurityOptions {
  if (security === undefined) return {}
  const options: KafkaSecurityOptions = {}
  if (security.sasl !== undefined) options.sasl = { ...security.sasl }
  if (security.tls !== undefined) {
    const { ca, cert, key } = security.tls
    options.tls = {
      ...(ca === undefined ? {} : { ca }),
      ...(cert === undefined ? {} : { cert }),
      ...(key === undefined ? {} : { key })
    }
  }
  return options
}

// A key of this process only: fingerprints tell credentials apart in memory, and say nothing outside it.
const fingerprintKey = randomBytes(32)

/**
 * A short value that differs when the credentials differ, for keying clients by (brokers, credentials) and for
 * noticing that a Secret changed. A keyed hash with a per-process random key: it cannot be reversed or
 * compared across processes, yet it is still best kept out of logs.
 */
export function securityFingerprint(security: KafkaClientSecurity | undefined): string {
  if (security === undefined) return ''
  const text = JSON.stringify([
    security.sasl?.mechanism ?? null,
    security.sasl?.username ?? null,
    security.sasl?.password ?? null,
    security.tls === undefined ? null : [security.tls.ca ?? null, security.tls.cert ?? null, security.tls.key ?? null]
  ])
  return createHmac('sha256', fingerprintKey).update(text).digest('hex').slice(0, 32)
}

/**
 * The key of one client per Kafka cluster and identity: the sorted broker list, then the security fingerprint
 * when there is one. Clients that read several sources' clusters (lag, partition counts) share a client only
 * between sources with the same brokers and the same credentials. Never log it: show `brokers` instead.
 */
export function clusterKey(brokers: readonly string[], security: KafkaClientSecurity | undefined): string {
  const list = [...brokers].sort().join(',')
  return security === undefined ? list : `${list}|${securityFingerprint(security)}`
}

/**
 * A Kafka client error as one line for a condition or a log: an authentication failure (a wrong SASL password, a
 * mechanism the broker does not enable) or a TLS failure is named as such, wherever the client nested it.
 */
export function kafkaErrorMessage(error: unknown): string {
  const all = flatten(error, 0)
  const auth = all.find(e => /SASL|authenticat/i.test(`${e.name} ${e.message}`))
  if (auth !== undefined) return `authentication to the brokers failed: ${auth.message}`
  const tls = all.find(e =>
    /certificate|self[- ]signed|TLS|SSL|ERR_TLS|UNABLE_TO_VERIFY/i.test(
      `${e.message} ${String((e as NodeJS.ErrnoException).code ?? '')}`
    )
  )
  if (tls !== undefined) return `TLS to the brokers failed: ${tls.message}`
  return error instanceof Error ? error.message : String(error)
}

function flatten(error: unknown, depth: number): Error[] {
  if (!(error instanceof Error) || depth > 5) return []
  const nested = [
    ...((error as { errors?: unknown[] }).errors ?? []),
    ...(error.cause === undefined ? [] : [error.cause])
  ]
  return [error, ...nested.flatMap(e => flatten(e, depth + 1))]
}
