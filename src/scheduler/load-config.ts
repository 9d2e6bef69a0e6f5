import { readFileSync } from 'node:fs'
import { parse } from 'yaml'
import { ErrorCodes, ShoalError } from '../errors/index.ts'
import { parseSchedulerConfig } from './config.ts'
import type { SchedulerConfig } from './config.ts'
import { SCHEDULER_PROFILES, isProfileName } from './profiles.ts'
import { createRegistry } from './registry.ts'
import type { PluginRegistry } from './registry.ts'

/**
 * The scheduler config from a shipped profile name (`ha`, `compact`) or a YAML/JSON file path. Throws
 * SHOAL_CONFIG when the file cannot be read or parsed, or the config is invalid (naming every bad field).
 */
export function loadSchedulerConfig(
  pathOrProfile: string,
  registry: PluginRegistry = createRegistry()
): SchedulerConfig {
  if (isProfileName(pathOrProfile)) {
    return parseSchedulerConfig(SCHEDULER_PROFILES[pathOrProfile], registry, `scheduler profile ${pathOrProfile}`)
  }
  const what = `scheduler config ${pathOrProfile}`
  let text: string
  try {
    text = readFileSync(pathOrProfile, 'utf8')
  } catch (cause) {
    const reason = (cause as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : String(cause)
    throw new ShoalError(
      ErrorCodes.CONFIG,
      `${what} cannot be read: ${reason} (a profile name is one of: ${Object.keys(SCHEDULER_PROFILES).join(', ')})`,
      { cause }
    )
  }
  let input: unknown
  try {
    input = parse(text, { prettyErrors: true, uniqueKeys: true })
  } catch (cause) {
    throw new ShoalError(ErrorCodes.CONFIG, `${what} is not valid YAML: ${(cause as Error).message}`, { cause })
  }
  return parseSchedulerConfig(input, registry, what)
}
