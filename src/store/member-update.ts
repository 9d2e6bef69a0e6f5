import type { LogRecord } from '../kafka/index.ts'
import { decodeValue } from './codec.ts'

/**
 * Header on a dispatcher's leaving tombstone naming the incarnation that wrote it, so a reader ignores the
 * tombstone of an older process when a newer one with the same id already heartbeats.
 */
export const INCARNATION_HEADER = 'shoal-incarnation'

/** One record of `<prefix>.members`, decoded: what the controllers' MembersView and ping's WatermarkBook read. */
export interface MemberUpdate {
  /** The record key: the dispatcher id. */
  readonly id: string
  /** The decoded value, or `tombstone` when the dispatcher left. */
  readonly value: unknown
  /** The record's broker append time (the topic has `message.timestamp.type=LogAppendTime`). */
  readonly appendTimeMs: number
  /** On a tombstone: the incarnation that wrote it, when the header says. */
  readonly tombstoneIncarnation?: number
}

/** A members record as a MemberUpdate; `skip` for a record without a key, `unreadable` when its value is not. */
export function memberUpdateOf(
  record: LogRecord
):
  | { readonly kind: 'update'; readonly update: MemberUpdate }
  | { readonly kind: 'skip' }
  | { readonly kind: 'unreadable'; readonly id: string; readonly reason: string } {
  const id = record.key?.toString()
  if (id === undefined) return { kind: 'skip' }
  const decoded = decodeValue(record.value, record.headers)
  if (decoded.kind === 'unreadable') return { kind: 'unreadable', id, reason: decoded.reason }
  const header = record.headers.get(INCARNATION_HEADER)?.toString()
  const tombstoneIncarnation = header === undefined ? Number.NaN : Number(header)
  return {
    kind: 'update',
    update: {
      id,
      value: decoded.kind === 'tombstone' ? 'tombstone' : decoded.value,
      appendTimeMs: Number(record.timestamp),
      ...(Number.isSafeInteger(tombstoneIncarnation) ? { tombstoneIncarnation } : {})
    }
  }
}
