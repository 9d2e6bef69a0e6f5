import { ErrorCodes, ShoalError } from '../errors/index.ts'
import { readBody } from './read-body.ts'
import { sendJson } from './respond.ts'
import { statusOf } from './status.ts'
import type { Handler } from './types.ts'

/** `GET|POST /shoal/v1/namespaces/NS/kafkasources/NAME/offsets`: a KafkaSource's committed offsets, and their reset. */
export const sourceOffsets: Handler = async (server, { req, res, method, params }) => {
  const namespace = params['namespace'] ?? ''
  const name = params['name'] ?? ''
  try {
    if (!server.offsets) throw new ShoalError(ErrorCodes.UNAVAILABLE, 'offsets are not served here', {})
    if (method === 'GET') return sendJson(res, 200, await server.offsets.read(namespace, name))
    let body: { reset?: unknown }
    try {
      body = JSON.parse((await readBody(req, 64 * 1024)) || '{}') as { reset?: unknown }
    } catch {
      throw new ShoalError(ErrorCodes.MALFORMED, 'the body must be JSON: {"reset": "earliest"}')
    }
    return sendJson(res, 200, await server.offsets.reset(namespace, name, body.reset))
  } catch (error) {
    return server.send(res, statusOf(error, { kind: 'kafkasources', name }))
  }
}
