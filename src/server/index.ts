export { ApiServer, DEFAULT_MAX_BODY_BYTES } from './api-server.ts'
export type { ApiServerOptions } from './api-server.ts'
