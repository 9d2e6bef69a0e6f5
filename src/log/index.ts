export { createLogger } from './logger.ts'
export type { Log, Logger } from './logger.ts'
