export { main } from './main.ts'
export type { CliIo } from './io.ts'
