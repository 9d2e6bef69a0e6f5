import { kinds } from '../api/index.ts'
import { openApiDocument } from './openapi.ts'
import { sendJson, sendText } from './respond.ts'
import type { Handler } from './types.ts'

/** `/readyz`: ready once this replica is a member of the controllers' group. */
export const readiness: Handler = (server, { res }) => {
  const ready = server.store.assignment.generation >= 0
  sendText(res, ready ? 200 : 503, ready ? 'ok' : 'not ready: not yet a member of the controllers group')
}

/** `GET /internal/v1/controllers`: this replica's buckets and every replica of the current group generation. */
export const controllers: Handler = (server, { res }) => {
  const store = server.store
  sendJson(res, 200, {
    self: { replicaId: store.replicaId, ...store.assignment, leader: store.isLeader },
    buckets: store.buckets,
    replicas: store.controllers().map(c => ({ ...c, leader: c.buckets.includes(0) }))
  })
}

/** `/openapi.json`. */
export const openApi: Handler = (_server, { res }) => sendJson(res, 200, openApiDocument())

/** `/apis`: the kinds served, as Kubernetes' discovery lists them. */
export const discovery: Handler = (_server, { res }) =>
  sendJson(res, 200, {
    kind: 'APIResourceList',
    resources: kinds.flatMap(k =>
      k.versions.map(version => ({
        group: k.group,
        version,
        kind: k.kind,
        name: k.plural,
        singularName: k.singular,
        shortNames: k.shortNames,
        namespaced: k.namespaced,
        storageVersion: version === k.versions[0]
      }))
    )
  })
