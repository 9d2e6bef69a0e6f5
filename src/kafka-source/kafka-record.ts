import { isUtf8 } from 'node:buffer'

// The shape of a consumed Kafka record that the mapping reads. It is what @platformatic/kafka's Message carries
// (bigint offset and timestamp, Buffer key and value, a Map or entry list of Buffer headers), loosened so tests
// and other clients can hand in plain values.

/** A header name or value as a client hands it over. */
export type HeaderBytes = Buffer | string

/** Kafka headers: an ordered entry list (duplicates kept) or a Map. */
export type KafkaHeaders =
  | Iterable<readonly [HeaderBytes, HeaderBytes | null | undefined]>
  | ReadonlyMap<HeaderBytes, HeaderBytes | null | undefined>

/** One consumed Kafka record. */
export interface KafkaRecord {
  readonly topic: string
  readonly partition: number
  readonly offset: bigint | number
  readonly key: Buffer | null | undefined
  /** null or undefined for a tombstone; its event has empty data. */
  readonly value: Buffer | null | undefined
  readonly headers: KafkaHeaders
  /** Milliseconds since the epoch; negative when the record has none. */
  readonly timestamp: bigint | number
}

/** One header with its name decoded (Kafka header names are UTF-8 strings) and its value as bytes. */
export interface RecordHeader {
  readonly name: string
  readonly value: Buffer
}

const EMPTY = Buffer.alloc(0)

/** The record's headers in order, names decoded, null values as empty bytes. */
export function recordHeaders(headers: KafkaHeaders): RecordHeader[] {
  const out: RecordHeader[] = []
  for (const [name, value] of headers) {
    out.push({
      name: typeof name === 'string' ? name : name.toString('utf8'),
      value: value === null || value === undefined ? EMPTY : typeof value === 'string' ? Buffer.from(value) : value
    })
  }
  return out
}

/** The bytes as a string when they are valid UTF-8, else undefined. */
export function decodeUtf8(bytes: Buffer): string | undefined {
  return isUtf8(bytes) ? bytes.toString('utf8') : undefined
}
