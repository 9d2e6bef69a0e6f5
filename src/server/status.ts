import { ErrorCodes, ShoalError } from '../errors/index.ts'

/** A Kubernetes `Status` object: how every API error is answered. */
export interface StatusBody {
  readonly kind: 'Status'
  readonly apiVersion: 'v1'
  readonly metadata: Record<string, never>
  readonly status: 'Failure' | 'Success'
  readonly message: string
  readonly reason: string
  readonly code: number
  readonly details?: {
    readonly name?: string
    readonly kind?: string
    readonly causes?: ReadonlyArray<{ field: string; message: string; reason: string }>
  }
}

const byCode: Record<string, { code: number; reason: string }> = {
  [ErrorCodes.INVALID]: { code: 422, reason: 'Invalid' },
  [ErrorCodes.MALFORMED]: { code: 400, reason: 'BadRequest' },
  [ErrorCodes.USAGE]: { code: 400, reason: 'BadRequest' },
  [ErrorCodes.UNKNOWN_KIND]: { code: 400, reason: 'BadRequest' },
  [ErrorCodes.TOO_LARGE]: { code: 413, reason: 'RequestEntityTooLarge' },
  [ErrorCodes.NOT_FOUND]: { code: 404, reason: 'NotFound' },
  [ErrorCodes.CONFLICT]: { code: 409, reason: 'Conflict' },
  [ErrorCodes.UNAVAILABLE]: { code: 503, reason: 'ServiceUnavailable' },
  [ErrorCodes.FENCED]: { code: 503, reason: 'ServiceUnavailable' },
  [ErrorCodes.UNAUTHENTICATED]: { code: 401, reason: 'Unauthorized' },
  [ErrorCodes.FORBIDDEN]: { code: 403, reason: 'Forbidden' },
  [ErrorCodes.RATE_LIMITED]: { code: 429, reason: 'TooManyRequests' },
  [ErrorCodes.SINK_REFUSED]: { code: 422, reason: 'Invalid' },
  [ErrorCodes.SECRET_KEY_MISSING]: { code: 501, reason: 'NotImplemented' }
}

/** Maps any error to a Status; unknown errors become a 500 without internals. */
export function statusOf(error: unknown, target?: { kind?: string; name?: string }): StatusBody {
  if (!(error instanceof ShoalError)) {
    return failure(500, 'InternalError', 'internal error; see the controller log', target)
  }
  const mapped = byCode[error.code] ?? { code: 500, reason: 'InternalError' }
  const reason =
    error.code === ErrorCodes.CONFLICT && /already exists/.test(error.message) ? 'AlreadyExists' : mapped.reason
  const causes = error.fields.map(f => ({ field: f.path, message: f.message, reason: 'FieldValueInvalid' }))
  return failure(mapped.code, reason, error.message, target, causes)
}

export function failure(
  code: number,
  reason: string,
  message: string,
  target?: { kind?: string; name?: string },
  causes: ReadonlyArray<{ field: string; message: string; reason: string }> = []
): StatusBody {
  const details = {
    ...(target?.name ? { name: target.name } : {}),
    ...(target?.kind ? { kind: target.kind } : {}),
    ...(causes.length > 0 ? { causes } : {})
  }
  return {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    reason,
    code,
    ...(Object.keys(details).length > 0 ? { details } : {})
  }
}

export function success(message: string, target: { kind: string; name: string }): StatusBody {
  return {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Success',
    message,
    reason: '',
    code: 200,
    details: { name: target.name, kind: target.kind }
  }
}

/** The 404 for a path the server does not serve at all. */
export function pathNotFound(path: string): StatusBody {
  return failure(404, 'NotFound', `the server could not find the requested resource (${path})`)
}
