import { homedir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { KAFKA_VERSION } from './version.ts'

/** Where Shoal caches what it downloads (Node.js, Kafka's jars): the same rule as scripts/lib.sh. */
export function shoalCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.SHOAL_CACHE_DIR) return env.SHOAL_CACHE_DIR
  return join(env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'shoal')
}

/** Kafka's jars: `$KAFKA_HOME/libs` when KAFKA_HOME is set, else the cache filled by scripts/resolve-kafka.sh. */
export function kafkaLibsDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.KAFKA_HOME) return join(env.KAFKA_HOME, 'libs')
  return join(shoalCacheDir(env), `kafka-${KAFKA_VERSION}`, 'libs')
}

/** The script that resolves the jars, from a checkout or an installed package. */
export const RESOLVE_SCRIPT = fileURLToPath(new URL('../../../scripts/resolve-kafka.sh', import.meta.url))
