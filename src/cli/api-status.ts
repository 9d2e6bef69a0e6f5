import { isObject } from './resources.ts'

/** One field-level cause of a Kubernetes `Status` (`details.causes[]`). */
export interface StatusCause {
  readonly field?: string
  readonly message?: string
  readonly reason?: string
}

/** A failed API call, normalised from the server's `Status` body (or synthesised when it sent none). */
export interface ApiStatus {
  readonly code: number
  readonly reason: string
  readonly message: string
  readonly causes: readonly StatusCause[]
}

const reasonByCode: Readonly<Record<number, string>> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  405: 'MethodNotAllowed',
  409: 'Conflict',
  413: 'RequestEntityTooLarge',
  415: 'UnsupportedMediaType',
  422: 'Invalid',
  429: 'TooManyRequests',
  500: 'InternalError',
  503: 'ServiceUnavailable',
  504: 'Timeout'
}

/** The `Status` a failed response carries; a body that is not one still yields a readable status. */
export function statusFromResponse(code: number, statusText: string, body: unknown, rawBody: string): ApiStatus {
  const fallbackReason = reasonByCode[code] ?? (code >= 500 ? 'InternalError' : 'BadRequest')
  if (isObject(body) && body['kind'] === 'Status') {
    const details = body['details']
    const rawCauses = isObject(details) && Array.isArray(details['causes']) ? details['causes'] : []
    return {
      code: typeof body['code'] === 'number' ? body['code'] : code,
      reason: typeof body['reason'] === 'string' && body['reason'] !== '' ? body['reason'] : fallbackReason,
      message: typeof body['message'] === 'string' ? body['message'] : `${code} ${statusText}`,
      causes: rawCauses.filter(isObject).map(c => ({
        ...(typeof c['field'] === 'string' ? { field: c['field'] } : {}),
        ...(typeof c['message'] === 'string' ? { message: c['message'] } : {}),
        ...(typeof c['reason'] === 'string' ? { reason: c['reason'] } : {})
      }))
    }
  }
  const excerpt = rawBody.trim().slice(0, 200)
  const message = `the server responded with ${code} ${statusText}`.trimEnd() + (excerpt === '' ? '' : `: ${excerpt}`)
  return { code, reason: fallbackReason, message, causes: [] }
}

function causeText(cause: StatusCause): string {
  if (cause.field !== undefined && cause.field !== '') return `${cause.field}: ${cause.message ?? cause.reason ?? ''}`
  return cause.message ?? cause.reason ?? ''
}

/**
 * The server's message followed by every cause it does not already spell out, so no field error is lost
 * and none is printed twice (servers often put the causes in the message as well).
 */
export function statusText(status: ApiStatus): string {
  const missing = status.causes.map(causeText).filter(text => text !== '' && !status.message.includes(text))
  if (missing.length === 0) return status.message
  const separator = status.causes.some(c => status.message.includes(causeText(c))) ? '; ' : ': '
  return `${status.message}${separator}${missing.join('; ')}`
}

/** kubectl's line for a failed call: `Error from server (NotFound): kafkasources… "x" not found`. */
export function serverErrorLine(status: ApiStatus): string {
  return `Error from server (${status.reason}): ${statusText(status)}`
}
