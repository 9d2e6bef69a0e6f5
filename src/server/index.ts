export { ApiServer } from './api-server.ts'
export { DEFAULT_MAX_BODY_BYTES } from './read-body.ts'
export type { ApiServerOptions, PathHandler, Rebalancer, RequestObserver } from './types.ts'
