import type { IncomingMessage } from 'node:http'
import { ErrorCodes, ShoalError } from '../errors/index.ts'

/** The largest request body a server takes unless told otherwise. */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024

/** Reads a request body, refusing it as soon as it passes `maxBytes` (never buffering more). */
export async function readBody(request: IncomingMessage, maxBytes: number): Promise<string> {
  const declared = Number(request.headers['content-length'] ?? NaN)
  if (Number.isFinite(declared) && declared > maxBytes) throw tooLarge(maxBytes)
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length
    if (size > maxBytes) {
      request.resume()
      throw tooLarge(maxBytes)
    }
    chunks.push(chunk)
  }
  const bytes = Buffer.concat(chunks)
  const text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false })
  try {
    return text.decode(bytes)
  } catch {
    throw new ShoalError(ErrorCodes.MALFORMED, 'request body is not valid UTF-8')
  }
}

function tooLarge(maxBytes: number): ShoalError {
  return new ShoalError(ErrorCodes.TOO_LARGE, `request body is larger than the limit of ${maxBytes} bytes`)
}
