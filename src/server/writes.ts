import type { IncomingMessage } from 'node:http'
import { ErrorCodes, ShoalError } from '../errors/index.ts'
import type { WriteOp, WriteResult } from '../store/index.ts'
import { admitForwarded } from './admission.ts'
import { forward, isForwarded } from './forward.ts'
import type { Peers } from './forward.ts'
import { DEFAULT_MAX_BODY_BYTES, readBody } from './read-body.ts'
import { sendJson } from './respond.ts'
import type { StatusBody } from './status.ts'
import type { Handler, ServerContext } from './types.ts'

/** Where a replica takes the writes other replicas forward to it, as the owner of their buckets. */
export const INTERNAL_WRITES = '/internal/v1/writes'

/**
 * Runs a write on the bucket's owner: here, or forwarded; retried while ownership moves. A forwarded write is
 * not passed on again, and waits only briefly: the replica that forwarded it retries.
 */
export function executeWrite(server: ServerContext, op: WriteOp, req: IncomingMessage): Promise<WriteResult> {
  if (isForwarded(req)) return server.store.writeAtOwner(op, 2_000)
  return server.store.writeAtOwner(op, server.options.writeTimeoutMs ?? 15_000, (url, forwarded) =>
    forwardWrite(server.peers, url, forwarded)
  )
}

/** `POST /internal/v1/writes`: a write another replica forwarded to this one. */
export const internalWrite: Handler = async (server, { req, res }) => {
  const text = await readBody(req, (server.options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES) * 2)
  const result = await executeWrite(server, admitForwarded(text), req)
  sendJson(res, 200, { result })
}

async function forwardWrite(peers: Peers, url: string, op: WriteOp): Promise<WriteResult> {
  const answer = await forward(peers, {
    to: 'owner',
    url,
    method: 'POST',
    path: INTERNAL_WRITES,
    body: JSON.stringify({ op }),
    timeoutMs: 10_000
  })
  const body = answer.body as { result?: WriteResult } & Partial<StatusBody>
  if (answer.statusCode === 200 && body.result) return body.result
  throw errorFromStatus(body, answer.statusCode)
}

/** Turns a Status from another replica back into the error it stood for. */
function errorFromStatus(body: Partial<StatusBody>, httpCode: number): ShoalError {
  const codeByReason: Record<string, (typeof ErrorCodes)[keyof typeof ErrorCodes]> = {
    Invalid: ErrorCodes.INVALID,
    BadRequest: ErrorCodes.MALFORMED,
    NotFound: ErrorCodes.NOT_FOUND,
    AlreadyExists: ErrorCodes.CONFLICT,
    Conflict: ErrorCodes.CONFLICT,
    RequestEntityTooLarge: ErrorCodes.TOO_LARGE,
    ServiceUnavailable: ErrorCodes.UNAVAILABLE,
    Unauthorized: ErrorCodes.UNAUTHENTICATED,
    Forbidden: ErrorCodes.FORBIDDEN
  }
  const code = codeByReason[body.reason ?? ''] ?? ErrorCodes.INTERNAL
  const fields = (body.details?.causes ?? []).map(c => ({ path: c.field, message: c.message }))
  return new ShoalError(code, body.message ?? `HTTP ${httpCode}`, { fields, retriable: httpCode === 503 })
}
