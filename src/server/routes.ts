import { controllers, discovery, openApi, readiness } from './cluster.ts'
import { approveRebalance, autoscaling, pool, proposeRebalance } from './leader.ts'
import { sourceOffsets } from './offsets.ts'
import { resources } from './resources.ts'
import { createRouter } from './router.ts'
import type { Route } from './router.ts'
import type { Handler } from './types.ts'
import { INTERNAL_WRITES, internalWrite } from './writes.ts'

/**
 * Every path the API serves once a store is attached, first match wins. `/healthz` and the mounted paths
 * (/metrics, /ui) are answered before these, by the server itself.
 */
export const routes: ReadonlyArray<Route<Handler>> = [
  { methods: 'any', path: '/readyz', handler: readiness },
  { methods: 'any', path: '/openapi.json', handler: openApi },
  { methods: 'any', path: '/apis', handler: discovery },
  { methods: ['POST'], path: INTERNAL_WRITES, handler: internalWrite },
  { methods: ['GET'], path: '/shoal/v1/rebalance', handler: proposeRebalance },
  { methods: ['POST'], path: '/shoal/v1/rebalance', handler: approveRebalance },
  { methods: ['GET'], path: '/shoal/v1/autoscaling', handler: autoscaling },
  { methods: ['GET'], path: '/shoal/v1/pool', handler: pool },
  {
    methods: ['GET', 'POST'],
    path: '/shoal/v1/namespaces/:namespace/kafkasources/:name/offsets',
    handler: sourceOffsets
  },
  { methods: ['GET'], path: '/internal/v1/controllers', handler: controllers },
  // Resource paths decide their own methods: an unknown kind is a 404 whatever the method.
  { methods: 'any', path: '/apis/:group/:version/:plural', handler: resources },
  { methods: 'any', path: '/apis/:group/:version/:plural/:name', handler: resources },
  { methods: 'any', path: '/apis/:group/:version/namespaces/:namespace/:plural', handler: resources },
  { methods: 'any', path: '/apis/:group/:version/namespaces/:namespace/:plural/:name', handler: resources },
  // Kubernetes serves its core group (Secrets) under /api/v1: the same as /apis/<empty group>/v1.
  { methods: 'any', path: '/api/:version/:plural', handler: resources },
  { methods: 'any', path: '/api/:version/:plural/:name', handler: resources },
  { methods: 'any', path: '/api/:version/namespaces/:namespace/:plural', handler: resources },
  { methods: 'any', path: '/api/:version/namespaces/:namespace/:plural/:name', handler: resources }
]

export const route = createRouter(routes)
