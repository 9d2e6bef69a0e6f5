import type { IncomingMessage } from 'node:http'
import { ErrorCodes, ShoalError } from '../errors/index.ts'

/** The largest request body a server takes unless told otherwise. */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024

/**
 * Reads a request body, refusing it as soon as it passes `maxBytes` (never buffering more). A refused body is not
 * cut off: the rest is read and dropped, so the client can finish sending and read the 413 on the same connection.
 */
export async function readBody(request: IncomingMessage, maxBytes: number): Promise<string> {
  const declared = Number(request.headers['content-length'] ?? NaN)
  if (Number.isFinite(declared) && declared > maxBytes) throw tooLarge(maxBytes)
  const bytes = await new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    const onData = (chunk: Buffer) => {
      size += chunk.length
      if (size <= maxBytes) return void chunks.push(chunk)
      request.off('data', onData)
      request.off('end', onEnd)
      request.resume()
      reject(tooLarge(maxBytes))
    }
    const onEnd = () => resolve(Buffer.concat(chunks))
    request.on('data', onData)
    request.once('end', onEnd)
    request.once('error', reject)
  })
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
