import { runControllerCommand } from '../controller/index.ts'
import { runKafkaCommand } from '../kafka/index.ts'
import { runUp } from './up.ts'

/** Entry point of the `shoal` executable; returns the process exit code. */
export async function main(argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv
  switch (command) {
    case 'controller':
      return runControllerCommand(rest)
    case 'kafka':
      return runKafkaCommand(rest)
    case 'up':
      return runUp(rest)
    default:
      process.stderr.write(`shoal: unknown command ${command ?? '(none)'}\n`)
      return 2
  }
}
