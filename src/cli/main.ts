import { runControllerCommand } from '../controller/index.ts'
import { runDispatcherCommand } from '../dispatcher/index.ts'
import { ErrorCodes, isShoalError } from '../errors/index.ts'
import { runKafkaCommand } from '../kafka/embedded/index.ts'
import { runApply } from './apply.ts'
import { runDelete } from './delete.ts'
import { runDescribe } from './describe.ts'
import { runGet } from './get.ts'
import { isHelpTopic, usage } from './help.ts'
import { processIo } from './io.ts'
import type { CliIo } from './io.ts'
import { isControllersGet, runGetControllers } from './controllers.ts'
import { runCordon, runRebalance, runScale } from './operate.ts'
import { runOffsets, runPause } from './source-ops.ts'
import { runPerf } from './perf.ts'
import { runSink } from './sink.ts'
import { runUp } from './up.ts'
import { clientVersion, runVersion } from './version.ts'

type ResourceCommand = (args: readonly string[], io: CliIo) => Promise<number>

const resourceCommands: Readonly<Record<string, ResourceCommand>> = {
  apply: runApply,
  get: (args, io) => (isControllersGet(args) ? runGetControllers(args, io) : runGet(args, io)),
  describe: runDescribe,
  delete: runDelete,
  version: runVersion,
  cordon: (args, io) => runCordon(args, io, true),
  uncordon: (args, io) => runCordon(args, io, false),
  scale: runScale,
  rebalance: runRebalance,
  pause: (args, io) => runPause(args, io, true),
  resume: (args, io) => runPause(args, io, false),
  offsets: runOffsets
}

/** Flags that take a value and may come before the command (`shoal -n team-a get ks`). */
const leadingValueFlags = new Set([
  '-n',
  '--namespace',
  '-s',
  '--server',
  '--request-timeout',
  '--token',
  '--certificate-authority'
])
const leadingBooleanFlags = new Set(['-A', '--all-namespaces'])

/** Entry point of the `shoal` executable; returns the process exit code. */
export async function main(argv: readonly string[], io: CliIo = processIo()): Promise<number> {
  const [command, ...rest] = hoistLeadingFlags(argv)
  switch (command) {
    case 'controller':
      return runControllerCommand(rest)
    case 'kafka':
      return runKafkaCommand(rest)
    case 'dispatcher':
      return runDispatcherCommand(rest)
    case 'up':
      return runUp(rest)
    case 'sink':
      return runSink(rest)
    case 'perf':
      return runPerf(rest)
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      return help(rest[0], io)
    case '--version':
      io.stdout.write(`${clientVersion()}\n`)
      return 0
  }
  const run = resourceCommands[command]
  if (run === undefined) {
    io.stderr.write(`error: unknown command "${command}" for "shoal"\nRun 'shoal --help' for usage.\n`)
    return 2
  }
  try {
    return await run(rest, io)
  } catch (error) {
    return reportError(error, command, io)
  }
}

function help(topic: string | undefined, io: CliIo): number {
  if (topic === undefined) {
    io.stdout.write(usage.shoal)
    return 0
  }
  if (isHelpTopic(topic)) {
    io.stdout.write(usage[topic])
    return 0
  }
  if (['controller', 'kafka', 'up', 'dispatcher', 'sink', 'perf'].includes(topic)) {
    io.stdout.write(`Run 'shoal ${topic} --help' for its flags.\n`)
    return 0
  }
  io.stderr.write(`error: unknown help topic "${topic}"\nRun 'shoal --help' for usage.\n`)
  return 2
}

/** One line per failure, no stack trace (unless SHOAL_DEBUG is set): usage errors exit 2, the rest 1. */
function reportError(error: unknown, command: string, io: CliIo): number {
  if (isShoalError(error, ErrorCodes.USAGE)) {
    io.stderr.write(`error: ${error.message}\nSee 'shoal ${command} --help' for usage.\n`)
    return 2
  }
  const message = error instanceof Error ? error.message : String(error)
  io.stderr.write(`error: ${message}\n`)
  if (io.env['SHOAL_DEBUG'] !== undefined && error instanceof Error && error.stack !== undefined) {
    io.stderr.write(`${error.stack}\n`)
  }
  return 1
}

/**
 * Moves connection and namespace flags given before the command to after it, so `shoal -s URL get ks`
 * works as kubectl users expect. Only the resource commands see them; others keep their argv untouched.
 */
function hoistLeadingFlags(argv: readonly string[]): readonly string[] {
  const leading: string[] = []
  let i = 0
  while (i < argv.length) {
    const arg = argv[i] ?? ''
    const flag = arg.split('=')[0] ?? arg
    if (leadingBooleanFlags.has(arg)) {
      leading.push(arg)
      i += 1
    } else if (leadingValueFlags.has(flag)) {
      const takesNext = !arg.includes('=')
      leading.push(...argv.slice(i, i + (takesNext ? 2 : 1)))
      i += takesNext ? 2 : 1
    } else {
      break
    }
  }
  if (leading.length === 0) return argv
  const [command, ...rest] = argv.slice(i)
  if (command === undefined || !Object.hasOwn(resourceCommands, command)) return argv
  return [command, ...leading, ...rest]
}
