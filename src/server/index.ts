export { ApiServer, DEFAULT_MAX_BODY_BYTES } from './api-server.ts'
export type { ApiServerOptions, Rebalancer } from './api-server.ts'
