import type { IncomingMessage } from 'node:http'
import { request as httpRequest } from 'undici'
import type { Dispatcher } from 'undici'
import { ErrorCodes, ShoalError } from '../errors/index.ts'

/** Marks a request one replica passed to another, so that it is never passed on again. */
export const FORWARDED_HEADER = 'x-shoal-forwarded'

/** How this replica calls the others: the internal token, and a TLS agent that trusts their certificates. */
export interface Peers {
  readonly headers: Readonly<Record<string, string>>
  readonly dispatcher?: Dispatcher
}

/** A request passed to the replica that can answer it: a bucket's owner, or the leader (bucket 0's owner). */
export interface ForwardRequest {
  readonly to: 'owner' | 'leader'
  readonly url: string
  readonly method: 'GET' | 'POST'
  readonly path: string
  /** A JSON body. */
  readonly body?: string
  readonly timeoutMs: number
}

/** The other replica's answer, as it gave it. */
export interface ForwardAnswer {
  readonly statusCode: number
  readonly body: unknown
}

export function isForwarded(req: IncomingMessage): boolean {
  return req.headers[FORWARDED_HEADER] !== undefined
}

/**
 * Passes a request to another replica, marked as forwarded and with the internal token. A replica that does not
 * answer is a retriable UNAVAILABLE: ownership is likely moving. An answer that is not JSON is an error as is.
 */
export async function forward(peers: Peers, request: ForwardRequest): Promise<ForwardAnswer> {
  let response
  try {
    response = await httpRequest(`${request.url}${request.path}`, {
      method: request.method,
      headers: {
        ...(request.body === undefined ? {} : { 'content-type': 'application/json' }),
        [FORWARDED_HEADER]: '1',
        ...peers.headers
      },
      ...(peers.dispatcher === undefined ? {} : { dispatcher: peers.dispatcher }),
      ...(request.body === undefined ? {} : { body: request.body }),
      headersTimeout: request.timeoutMs,
      bodyTimeout: request.timeoutMs
    })
  } catch (error) {
    throw new ShoalError(
      ErrorCodes.UNAVAILABLE,
      `the ${request.to} at ${request.url} did not answer: ${(error as Error).message}`,
      { retriable: true, cause: error }
    )
  }
  return { statusCode: response.statusCode, body: await response.body.json() }
}
