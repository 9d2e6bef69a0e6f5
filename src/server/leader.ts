import { ErrorCodes, ShoalError } from '../errors/index.ts'
import { forward, isForwarded } from './forward.ts'
import { readBody } from './read-body.ts'
import { sendJson } from './respond.ts'
import type { ApiRequest, Handler, ServerContext } from './types.ts'

/**
 * Answers what only the scheduler leader knows (its proposals, autoscalers, the pool): on the leader with
 * `answer` (undefined: nothing to answer with), and on any other replica by forwarding the request to it.
 */
async function atLeader(
  server: ServerContext,
  { req, res, method, path }: ApiRequest,
  answer: () => Promise<unknown>,
  forwarded: { readonly body?: string; readonly timeoutMs: number }
): Promise<void> {
  const leader = server.store.ownerOf(0)
  if (leader.kind === 'remote' && !isForwarded(req)) {
    const relayed = await forward(server.peers, {
      to: 'leader',
      url: leader.url,
      method: method === 'POST' ? 'POST' : 'GET',
      path,
      ...(forwarded.body === undefined ? {} : { body: forwarded.body }),
      timeoutMs: forwarded.timeoutMs
    })
    return sendJson(res, relayed.statusCode, relayed.body)
  }
  const body = leader.kind === 'self' ? await answer() : undefined
  if (body === undefined) {
    throw new ShoalError(ErrorCodes.UNAVAILABLE, 'no scheduler leader right now; retry', { retriable: true })
  }
  sendJson(res, 200, body)
}

/** Rebalances can take a while to plan: the leader gets longer to answer than for other requests. */
const REBALANCE_TIMEOUT_MS = 30_000
const LEADER_TIMEOUT_MS = 10_000

/** `GET /shoal/v1/rebalance`: the scheduler's rebalance proposal. */
export const proposeRebalance: Handler = (server, request) =>
  atLeader(server, request, async () => server.rebalancer?.propose(), { timeoutMs: REBALANCE_TIMEOUT_MS })

/** `POST /shoal/v1/rebalance {revision}`: approves the proposal of that revision. */
export const approveRebalance: Handler = async (server, request) => {
  const body = await readBody(request.req, 64 * 1024)
  const approve = async () => {
    if (server.rebalancer === undefined) return undefined
    const revision = (JSON.parse(body || '{}') as { revision?: unknown }).revision
    if (typeof revision !== 'number' || !Number.isInteger(revision)) {
      throw new ShoalError(ErrorCodes.INVALID, 'revision: required, the revision of the proposal being approved', {
        fields: [{ path: 'revision', message: 'required: the revision of the proposal being approved' }]
      })
    }
    return server.rebalancer.approve(revision)
  }
  await atLeader(server, request, approve, { body, timeoutMs: REBALANCE_TIMEOUT_MS })
}

/** `GET /shoal/v1/autoscaling`: the leader's autoscalers. */
export const autoscaling: Handler = (server, request) =>
  atLeader(
    server,
    request,
    async () => {
      const items = await server.rebalancer?.autoscaling?.()
      return items === undefined ? undefined : { items }
    },
    { timeoutMs: LEADER_TIMEOUT_MS }
  )

/** `GET /shoal/v1/pool`: the leader's dispatcher pool decision. */
export const pool: Handler = (server, request) =>
  atLeader(server, request, async () => server.rebalancer?.pool?.(), { timeoutMs: LEADER_TIMEOUT_MS })
