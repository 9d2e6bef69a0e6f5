import { randomInt } from 'node:crypto'

/** A payload of `size` random upper-case letters, as Kafka's perf tool makes one. */
export function randomPayload(size: number): Buffer {
  const payload = Buffer.allocUnsafe(size)
  for (let i = 0; i < size; i++) payload[i] = 65 + randomInt(26)
  return payload
}
