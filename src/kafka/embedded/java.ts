import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { ErrorCodes, ShoalError } from '../../errors/index.ts'
import { KAFKA_VERSION } from './version.ts'

/** Kafka 4 brokers need Java 17 or newer. */
export const MIN_JAVA_MAJOR = 17

/** The java executable: `$JAVA_HOME/bin/java` when JAVA_HOME is set, as Kafka's own scripts do, else `java`. */
export function javaExecutable(env: NodeJS.ProcessEnv = process.env): string {
  return env.JAVA_HOME ? join(env.JAVA_HOME, 'bin', 'java') : 'java'
}

/** The major version in `java -version` output: `"17.0.15"` → 17, `"1.8.0_392"` → 8; undefined if none. */
export function parseJavaMajor(versionOutput: string): number | undefined {
  const match = /version "(\d+)(?:\.(\d+))?[^"]*"/.exec(versionOutput)
  if (!match) return undefined
  const first = Number(match[1])
  return first === 1 && match[2] !== undefined ? Number(match[2]) : first
}

/** Checks that Java >= 17 is there; returns the executable, or throws one clear SHOAL_JAVA error. */
export async function checkJava(env: NodeJS.ProcessEnv = process.env): Promise<string> {
  const java = javaExecutable(env)
  const where = env.JAVA_HOME ? `JAVA_HOME=${env.JAVA_HOME}` : 'PATH'
  const output = await new Promise<string>((resolve, reject) => {
    execFile(java, ['-version'], { timeout: 30_000 }, (error, stdout, stderr) => {
      if (error && (error as NodeJS.ErrnoException).code === 'ENOENT') {
        reject(
          new ShoalError(
            ErrorCodes.JAVA,
            `Kafka ${KAFKA_VERSION} needs Java ${MIN_JAVA_MAJOR} or newer, but there is no java on ${where}`,
            { cause: error }
          )
        )
        return
      }
      resolve(`${stderr}${stdout}`)
    })
  })
  const major = parseJavaMajor(output)
  if (major === undefined) {
    throw new ShoalError(ErrorCodes.JAVA, `could not tell the Java version from \`${java} -version\` (from ${where})`)
  }
  if (major < MIN_JAVA_MAJOR) {
    throw new ShoalError(
      ErrorCodes.JAVA,
      `Kafka ${KAFKA_VERSION} needs Java ${MIN_JAVA_MAJOR} or newer, but ${java} (from ${where}) is Java ${major}`
    )
  }
  return java
}
