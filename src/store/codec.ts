/**
 * Records on the store's topics are JSON with a schema version in a header, so a rolling upgrade can
 * read what an older version wrote. Version 1 is the only one so far.
 */
export const SCHEMA_VERSION = 1
export const SCHEMA_HEADER = 'shoal-schema'

export function encodeValue(value: unknown): Buffer {
  return Buffer.from(JSON.stringify(value), 'utf8')
}

export function decodeValue(
  value: Buffer | null,
  headers: ReadonlyMap<string, Buffer>
): { kind: 'value'; value: unknown } | { kind: 'tombstone' } | { kind: 'unreadable'; reason: string } {
  if (value === null || value.length === 0) return { kind: 'tombstone' }
  const version = Number(headers.get(SCHEMA_HEADER)?.toString() ?? '1')
  if (version > SCHEMA_VERSION)
    return { kind: 'unreadable', reason: `schema version ${version} is newer than ${SCHEMA_VERSION}` }
  try {
    return { kind: 'value', value: JSON.parse(value.toString('utf8')) as unknown }
  } catch (error) {
    return { kind: 'unreadable', reason: (error as Error).message }
  }
}

/** Header keys go on the wire as bytes, so they are Buffers here too. */
export function schemaHeaders(): Map<Buffer, Buffer> {
  return new Map([[Buffer.from(SCHEMA_HEADER), Buffer.from(String(SCHEMA_VERSION))]])
}
