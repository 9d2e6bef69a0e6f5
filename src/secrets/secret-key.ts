import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { ErrorCodes, ShoalError } from '../errors/index.ts'

/** The environment variable that holds the secret key when no `--secret-key-file` is given. */
export const SECRET_KEY_ENV = 'SHOAL_SECRET_KEY'

/** The AES-256 key that seals Secret values in the log. Its id is a digest prefix: it names the key, not its bits. */
export interface SecretKey {
  readonly id: string
  readonly bytes: Buffer
}

/**
 * Reads the secret key from `file` or, when none is given, from SHOAL_SECRET_KEY. The text is 32 bytes in
 * base64 (44 characters) or hex (64 characters); surrounding whitespace is ignored. Returns undefined when
 * neither is set: Secrets are then refused. Throws SHOAL_USAGE for a malformed key, naming where it came from
 * (never the key itself).
 */
export function loadSecretKey(file: string | undefined, env: NodeJS.ProcessEnv = process.env): SecretKey | undefined {
  let text: string
  let where: string
  if (file !== undefined) {
    where = `--secret-key-file ${file}`
    try {
      text = readFileSync(file, 'utf8')
    } catch (error) {
      throw new ShoalError(ErrorCodes.USAGE, `${where}: cannot read it (${(error as NodeJS.ErrnoException).code})`, {
        cause: error
      })
    }
  } else {
    const value = env[SECRET_KEY_ENV]
    if (value === undefined || value.trim() === '') return undefined
    where = SECRET_KEY_ENV
    text = value
  }
  return parseSecretKey(text.trim(), where)
}

/** A key from its text form (base64 or hex of 32 bytes). */
export function parseSecretKey(text: string, where: string): SecretKey {
  let bytes: Buffer | undefined
  if (/^[0-9a-fA-F]{64}$/.test(text)) bytes = Buffer.from(text, 'hex')
  else if (/^[A-Za-z0-9+/]{43}=$/.test(text) || /^[A-Za-z0-9_-]{43}$/.test(text)) {
    bytes = Buffer.from(text, text.includes('-') || text.includes('_') ? 'base64url' : 'base64')
  }
  if (bytes?.length !== 32) {
    throw new ShoalError(
      ErrorCodes.USAGE,
      `${where}: not a secret key: give 32 random bytes as base64 or hex (for example: openssl rand -base64 32)`
    )
  }
  return { id: createHash('sha256').update(bytes).digest('hex').slice(0, 12), bytes }
}
