import { spawn } from 'node:child_process'
import { existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { ErrorCodes, ShoalError } from '../../errors/index.ts'
import { RESOLVE_SCRIPT, kafkaLibsDir } from './paths.ts'
import { KAFKA_VERSION } from './version.ts'

export interface EnsureJarsOptions {
  readonly onProgress?: (line: string) => void
  readonly signal?: AbortSignal
  readonly env?: NodeJS.ProcessEnv
}

/**
 * The folder of Kafka's jars, resolving them from Maven Central first (scripts/resolve-kafka.sh) unless they
 * are cached already or KAFKA_HOME is set. Throws SHOAL_KAFKA_DOWNLOAD with the one line the script printed.
 */
export async function ensureKafkaJars(options: EnsureJarsOptions = {}): Promise<string> {
  const env = options.env ?? process.env
  const libs = kafkaLibsDir(env)
  if (env.KAFKA_HOME) {
    if (!hasKafkaJar(libs)) {
      throw new ShoalError(ErrorCodes.KAFKA_DOWNLOAD, `KAFKA_HOME is set, but ${libs} holds no kafka_2.13-*.jar`)
    }
    return libs
  }
  if (existsSync(join(libs, '.complete'))) return libs
  if (!existsSync(RESOLVE_SCRIPT)) {
    throw new ShoalError(
      ErrorCodes.KAFKA_DOWNLOAD,
      `Kafka ${KAFKA_VERSION} jars are not in ${libs}; run scripts/setup.sh from a Shoal checkout, or set KAFKA_HOME`
    )
  }
  await runResolveScript(options, env)
  return libs
}

function hasKafkaJar(libs: string): boolean {
  try {
    return readdirSync(libs).some(name => /^kafka_2\.13-.*\.jar$/.test(name))
  } catch {
    return false
  }
}

async function runResolveScript(options: EnsureJarsOptions, env: NodeJS.ProcessEnv): Promise<void> {
  const child = spawn('bash', [RESOLVE_SCRIPT, KAFKA_VERSION], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(options.signal ? { signal: options.signal } : {})
  })
  let lastError = ''
  const progress = options.onProgress ?? (() => {})
  createInterface({ input: child.stdout }).on('line', line => progress(line))
  createInterface({ input: child.stderr }).on('line', line => {
    lastError = line.replace(/^shoal: /, '')
  })
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject)
    child.once('close', code => resolve(code))
  }).catch((error: unknown) => {
    throw new ShoalError(
      ErrorCodes.KAFKA_DOWNLOAD,
      `could not resolve Kafka ${KAFKA_VERSION} jars from Maven Central: ${(error as Error).message}`,
      { cause: error }
    )
  })
  if (code !== 0) {
    throw new ShoalError(
      ErrorCodes.KAFKA_DOWNLOAD,
      lastError || `could not resolve Kafka ${KAFKA_VERSION} jars from Maven Central: the resolver exited with ${code}`,
      { retriable: true }
    )
  }
}
