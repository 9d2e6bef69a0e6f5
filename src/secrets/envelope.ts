import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto'
import type { Envelope } from '../api/index.ts'
import type { SecretKey } from './secret-key.ts'

/**
 * Seals `plaintext` under `key`. `context` (the resource key `Secret/namespace/name`) is authenticated but not
 * stored: sealed values copied to another Secret, in another namespace, do not open there.
 */
export function seal(plaintext: Buffer, key: SecretKey, context: string): Envelope {
  const iv = randomBytes(12)
  const cipher = createCipheriv('aes-256-gcm', key.bytes, iv)
  cipher.setAAD(Buffer.from(context, 'utf8'))
  const data = Buffer.concat([cipher.update(plaintext), cipher.final()])
  return {
    alg: 'AES-256-GCM',
    kid: key.id,
    iv: iv.toString('base64'),
    tag: cipher.getAuthTag().toString('base64'),
    data: data.toString('base64')
  }
}

/** What opening an envelope gave: the plaintext, or why not (a message without any secret in it). */
export type Opened =
  { readonly kind: 'opened'; readonly plaintext: Buffer } | { readonly kind: 'failed'; readonly reason: string }

export function open(envelope: Envelope, key: SecretKey, context: string): Opened {
  if (envelope.kid !== key.id) {
    return {
      kind: 'failed',
      reason: `it was sealed with secret key ${envelope.kid}, and this process has key ${key.id}`
    }
  }
  try {
    const decipher = createDecipheriv('aes-256-gcm', key.bytes, Buffer.from(envelope.iv, 'base64'))
    decipher.setAAD(Buffer.from(context, 'utf8'))
    decipher.setAuthTag(Buffer.from(envelope.tag, 'base64'))
    const plaintext = Buffer.concat([decipher.update(Buffer.from(envelope.data, 'base64')), decipher.final()])
    return { kind: 'opened', plaintext }
  } catch {
    return { kind: 'failed', reason: 'its sealed values do not authenticate (altered, or moved from another Secret)' }
  }
}
