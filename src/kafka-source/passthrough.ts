import { CLOUD_EVENT_ATTRIBUTE_NAME } from '../api/index.ts'
import { isAbsoluteUri, isJsonMediaType, isMediaType, isRfc3339 } from './attribute-checks.ts'
import type { CloudEvent, CloudEventAttributes } from '../delivery/index.ts'
import type { RecordHeader } from './kafka-record.ts'
import { decodeUtf8 } from './kafka-record.ts'

// Records that already are CloudEvents, read by the CloudEvents Kafka protocol binding: binary mode (`ce_`
// headers, the `content-type` header as datacontenttype, the value as data) or structured mode (a
// `content-type: application/cloudevents+json` header and the whole event as JSON in the value).

/** A parsed event, or why the record is not a valid one. */
export type Parsed = { readonly ok: true; readonly event: CloudEvent } | { readonly ok: false; readonly reason: string }

const CE_PREFIX = 'ce_'
const STRUCTURED = 'application/cloudevents'

/** Whether the record is in binary mode: it has a `ce_specversion` header. */
export function isBinaryCloudEvent(headers: readonly RecordHeader[]): boolean {
  return headers.some(h => h.name.toLowerCase() === 'ce_specversion')
}

/** Whether the record is in structured mode: its `content-type` header names a CloudEvents event format. */
export function isStructuredCloudEvent(contentType: string | undefined): boolean {
  return contentType !== undefined && contentType.trim().toLowerCase().startsWith(STRUCTURED)
}

/** The event a binary-mode record carries; its value is the data, byte for byte. */
export function parseBinary(headers: readonly RecordHeader[], value: Buffer): Parsed {
  const fields = new Map<string, string>()
  let contentType: string | undefined
  for (const header of headers) {
    const lower = header.name.toLowerCase()
    if (lower === 'content-type') {
      const text = decodeUtf8(header.value)
      if (text === undefined) return fail('the content-type header is not UTF-8')
      contentType = text
      continue
    }
    if (!lower.startsWith(CE_PREFIX)) continue
    const name = lower.slice(CE_PREFIX.length)
    if (!CLOUD_EVENT_ATTRIBUTE_NAME.test(name))
      return fail(`header ${header.name}: not a CloudEvents attribute name (a-z, 0-9)`)
    const text = decodeUtf8(header.value)
    if (text === undefined) return fail(`header ${header.name}: the value is not UTF-8`)
    const previous = fields.get(name)
    if (previous !== undefined && previous !== text)
      return fail(`header ${header.name} appears twice with different values`)
    fields.set(name, text)
  }
  // The Kafka binding carries datacontenttype in content-type; a ce_datacontenttype header is tolerated.
  const datacontenttype = contentType ?? fields.get('datacontenttype')
  fields.delete('datacontenttype')
  return build(fields, datacontenttype, value)
}

/** The event a structured-mode record carries (JSON event format). */
export function parseStructured(contentType: string, value: Buffer): Parsed {
  const essence = (contentType.split(';')[0] ?? '').trim().toLowerCase()
  if (essence !== 'application/cloudevents+json') {
    return fail(`content-type ${essence}: only the JSON event format (application/cloudevents+json) is supported`)
  }
  const text = decodeUtf8(value)
  if (text === undefined) return fail('the structured event is not UTF-8')
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (error) {
    return fail(`the structured event is not valid JSON: ${(error as Error).message}`)
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) {
    return fail('the structured event is not a JSON object')
  }
  const fields = new Map<string, string>()
  let data: Buffer | undefined
  let hasJsonData = false
  let jsonData: unknown
  for (const [name, member] of Object.entries(json)) {
    if (name === 'data') {
      hasJsonData = member !== null
      jsonData = member
      continue
    }
    if (name === 'data_base64') {
      if (member === null) continue
      if (typeof member !== 'string' || !isBase64(member)) return fail('data_base64 is not a base64 string')
      data = Buffer.from(member, 'base64')
      continue
    }
    if (member === null) continue
    if (!CLOUD_EVENT_ATTRIBUTE_NAME.test(name))
      return fail(`member ${JSON.stringify(name)}: not a CloudEvents attribute name (a-z, 0-9)`)
    const canonical = canonicalString(member)
    if (canonical === undefined) return fail(`attribute ${name}: not a string, integer or boolean`)
    fields.set(name, canonical)
  }
  if (hasJsonData && data !== undefined) return fail('data and data_base64 are both present')
  let datacontenttype = fields.get('datacontenttype')
  fields.delete('datacontenttype')
  if (hasJsonData) {
    // JSON event format: with a JSON (or absent) datacontenttype, `data` holds the JSON value itself; otherwise
    // a string `data` is the text of the payload.
    if (datacontenttype === undefined) datacontenttype = 'application/json'
    const raw = !isJsonMediaType(datacontenttype) && typeof jsonData === 'string' ? jsonData : JSON.stringify(jsonData)
    data = Buffer.from(raw, 'utf8')
  }
  return build(fields, datacontenttype, data ?? Buffer.alloc(0))
}

function build(fields: Map<string, string>, datacontenttype: string | undefined, data: Buffer): Parsed {
  const specversion = fields.get('specversion')
  if (specversion !== '1.0') {
    return fail(
      specversion === undefined ? 'specversion is missing' : `specversion ${specversion} is not supported (1.0 is)`
    )
  }
  for (const required of ['id', 'source', 'type']) {
    const text = fields.get(required)
    if (text === undefined || text === '') return fail(`required attribute ${required} is missing or empty`)
  }
  const time = fields.get('time')
  if (time !== undefined && !isRfc3339(time)) return fail(`time ${JSON.stringify(time)} is not an RFC 3339 timestamp`)
  const dataschema = fields.get('dataschema')
  if (dataschema !== undefined && !isAbsoluteUri(dataschema))
    return fail(`dataschema ${JSON.stringify(dataschema)} is not a URI`)
  if (datacontenttype !== undefined && !isMediaType(datacontenttype)) {
    return fail(`datacontenttype ${JSON.stringify(datacontenttype)} is not a media type`)
  }
  const subject = fields.get('subject')
  const attributes: CloudEventAttributes = {
    specversion: '1.0',
    id: fields.get('id') as string,
    source: fields.get('source') as string,
    type: fields.get('type') as string,
    ...(datacontenttype === undefined ? {} : { datacontenttype }),
    ...(dataschema === undefined ? {} : { dataschema }),
    ...(subject === undefined ? {} : { subject }),
    ...(time === undefined ? {} : { time })
  }
  const extensions: Record<string, string> = {}
  for (const [name, text] of fields) {
    if (!CORE.has(name)) extensions[name] = text
  }
  return { ok: true, event: { attributes, extensions, data } }
}

const CORE = new Set(['specversion', 'id', 'source', 'type', 'dataschema', 'subject', 'time'])

function canonicalString(value: unknown): string | undefined {
  if (typeof value === 'string') return value
  if (typeof value === 'boolean') return value ? 'true' : 'false'
  if (typeof value === 'number' && Number.isSafeInteger(value)) return String(value)
  return undefined
}

function isBase64(text: string): boolean {
  return /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(text)
}

function fail(reason: string): Parsed {
  return { ok: false, reason }
}
