/** Stable error codes. Every code is documented in docs/errors.md; a test keeps the two in step. */
export const ErrorCodes = {
  /** A manifest or request body failed validation; `fields` names every offending field. */
  INVALID: 'SHOAL_INVALID',
  /** The request body could not be parsed as YAML or JSON. */
  MALFORMED: 'SHOAL_MALFORMED',
  /** The request body is larger than the configured limit. */
  TOO_LARGE: 'SHOAL_TOO_LARGE',
  /** The named resource does not exist. */
  NOT_FOUND: 'SHOAL_NOT_FOUND',
  /** The resource already exists (create) or its resourceVersion moved on (update, delete). */
  CONFLICT: 'SHOAL_CONFLICT',
  /** The apiVersion/kind pair is not one Shoal serves. */
  UNKNOWN_KIND: 'SHOAL_UNKNOWN_KIND',
  /** The bucket that holds the key has no reachable owner right now (rebalance in progress); retry. */
  UNAVAILABLE: 'SHOAL_UNAVAILABLE',
  /** This process was fenced: another owner took over its bucket or transactional id. */
  FENCED: 'SHOAL_FENCED',
  /** A command-line argument or configuration value is wrong. */
  USAGE: 'SHOAL_USAGE',
  /** A configuration file (the scheduler's plugins and weights) is unreadable or invalid; `fields` says where. */
  CONFIG: 'SHOAL_CONFIG',
  /** Java is missing or older than Kafka needs. */
  JAVA: 'SHOAL_JAVA',
  /** Kafka's jars could not be resolved or downloaded. */
  KAFKA_DOWNLOAD: 'SHOAL_KAFKA_DOWNLOAD',
  /** A port Shoal was asked to listen on is already taken. */
  PORT_IN_USE: 'SHOAL_PORT_IN_USE',
  /** The embedded Kafka did not start. */
  KAFKA_START: 'SHOAL_KAFKA_START',
  /** A Kafka operation failed. */
  KAFKA: 'SHOAL_KAFKA',
  /** The request carries no bearer token, or one the API does not know (HTTP 401). */
  UNAUTHENTICATED: 'SHOAL_UNAUTHENTICATED',
  /** The token may not do this: another namespace, a cluster-wide kind, or an admin operation (HTTP 403). */
  FORBIDDEN: 'SHOAL_FORBIDDEN',
  /** The token sent more requests than its limit allows; retry after the Retry-After seconds (HTTP 429). */
  RATE_LIMITED: 'SHOAL_RATE_LIMITED',
  /** A sink is refused by the sink policy: a forbidden address range or Shoal's own endpoint. */
  SINK_REFUSED: 'SHOAL_SINK_REFUSED',
  /** A sink did not answer a delivery attempt within the delivery timeout; the attempt is retried. */
  SINK_TIMEOUT: 'SHOAL_SINK_TIMEOUT',
  /** A new connection to a sink was never accepted (its accept queue dropped it); the request is sent again. */
  SINK_NOT_ACCEPTED: 'SHOAL_SINK_NOT_ACCEPTED',
  /** A Secret was sent to a controller that has no secret key to seal it with (`--secret-key-file`, SHOAL_SECRET_KEY). */
  SECRET_KEY_MISSING: 'SHOAL_SECRET_KEY_MISSING',
  /** A call to the Shoal API failed (network or unexpected answer). */
  API: 'SHOAL_API',
  /** Something that should not happen did; a bug. */
  INTERNAL: 'SHOAL_INTERNAL'
} as const

export type ErrorCode = (typeof ErrorCodes)[keyof typeof ErrorCodes]

/** One offending field: its path (`spec.delivery.backoffDelay`) and what is wrong with it. */
export interface FieldError {
  readonly path: string
  readonly message: string
}

export interface ShoalErrorOptions {
  readonly cause?: unknown
  readonly retriable?: boolean
  readonly fields?: readonly FieldError[]
}

/** The one error type of Shoal: a stable code, a message for people, and structured fields. */
export class ShoalError extends Error {
  readonly code: ErrorCode
  readonly retriable: boolean
  readonly fields: readonly FieldError[]

  constructor(code: ErrorCode, message: string, options: ShoalErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.name = 'ShoalError'
    this.code = code
    this.retriable = options.retriable ?? false
    this.fields = options.fields ?? []
  }
}

/** A validation failure naming every offending field. */
export function invalid(what: string, fields: readonly FieldError[]): ShoalError {
  const detail = fields.map(f => `${f.path}: ${f.message}`).join('; ')
  return new ShoalError(ErrorCodes.INVALID, `${what} is invalid: ${detail}`, { fields })
}

export function isShoalError(error: unknown, code?: ErrorCode): error is ShoalError {
  return error instanceof ShoalError && (code === undefined || error.code === code)
}
