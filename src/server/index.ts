export { ApiServer, DEFAULT_MAX_BODY_BYTES } from './api-server.ts'
export type { ApiServerOptions, PathHandler, Rebalancer, RequestObserver } from './api-server.ts'
