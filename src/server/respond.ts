import type { ServerResponse } from 'node:http'

/** Answers with a JSON body, unless an answer was already sent. */
export function sendJson(res: ServerResponse, code: number, body: unknown, headers: Record<string, string> = {}): void {
  if (res.headersSent) return
  const text = JSON.stringify(body)
  // An answer given before the body was read (refused, unknown path): close the connection, so the client's
  // next request never meets the reset that discarding the rest of the body would cause.
  const close = res.req.complete ? {} : { connection: 'close' }
  res.writeHead(code, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    ...headers,
    ...close
  })
  res.end(text)
}

export function sendText(res: ServerResponse, code: number, body: string): void {
  res.writeHead(code, { 'content-type': 'text/plain' })
  res.end(body)
}
