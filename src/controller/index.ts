export { runControllerCommand } from './controller-command.ts'
export { startController } from './controller.ts'
export type { ControllerOptions, RunningController } from './controller.ts'
