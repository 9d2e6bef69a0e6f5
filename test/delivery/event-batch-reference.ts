// The batch encoder as it was before it wrote the body directly (issue 16, part 9): an object per event and
// JSON.stringify, the events' strings joined and encoded. Kept as the reference the encoder is checked against,
// byte for byte (test/delivery/event-batch-encoding.test.ts). Not used by src/.
import { isUtf8 } from 'node:buffer'
import type { CloudEvent } from '../../src/delivery/index.ts'

/** The old `eventBatch(events).body`. */
export function referenceBatchBody(events: readonly CloudEvent[]): Buffer {
  return Buffer.from(`[${events.map(referenceStructuredJson).join(`,`)}]`)
}

/**
 * One event in the JSON event format: the attributes and extensions as top-level string members, and the data
 * as §3.1 says — a JSON datacontenttype (or none, which means application/json) with data that parses as JSON
 * goes as the `data` value itself; a text datacontenttype with valid UTF-8 as a `data` string; anything else as
 * `data_base64`. Empty data is no data.
 */
export function referenceStructuredJson(event: CloudEvent): string {
  const members: Record<string, string> = {}
  for (const [name, value] of Object.entries(event.attributes) as Array<[string, string | undefined]>) {
    if (value !== undefined) members[name] = value
  }
  for (const [name, value] of Object.entries(event.extensions)) {
    if (!(name in members) && name !== 'data' && name !== 'data_base64') members[name] = value
  }
  const head = JSON.stringify(members)
  const data = dataMember(event.data, event.attributes.datacontenttype)
  return data === undefined ? head : `${head.slice(0, -1)},${data}}`
}

function dataMember(data: Buffer, contentType: string | undefined): string | undefined {
  if (data.length === 0) return undefined
  const mediaType = (contentType ?? 'application/json').split(';')[0]!.trim().toLowerCase()
  if (mediaType === 'application/json' || mediaType.endsWith('+json') || mediaType === 'text/json') {
    // The bytes are spliced in as they are once they parse: the sink gets the producer's JSON, not a re-encoding.
    // Checked cheaply first (no exception for the usual binary payload).
    if (mayBeJson(data) && isUtf8(data)) {
      const text = data.toString('utf8')
      if (isJson(text)) return `"data":${text}`
    }
  } else if (mediaType.startsWith('text/') && isUtf8(data)) {
    return `"data":${JSON.stringify(data.toString('utf8'))}`
  }
  return `"data_base64":${JSON.stringify(data.toString('base64'))}`
}

// A JSON text starts, after whitespace, with one of `{ [ " - 0-9 t f n`.
function mayBeJson(data: Buffer): boolean {
  for (const byte of data) {
    if (byte === 0x20 || byte === 0x09 || byte === 0x0a || byte === 0x0d) continue
    return JSON_START.has(byte)
  }
  return false
}

const JSON_START = new Set([...'{["-0123456789tfn'].map(c => c.charCodeAt(0)))

function isJson(text: string): boolean {
  try {
    JSON.parse(text)
    return true
  } catch {
    return false
  }
}
