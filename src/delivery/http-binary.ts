import type { CloudEvent } from './cloud-event.ts'
import { TRACE_EXTENSIONS } from './cloud-event.ts'

// The HTTP binary content mode (CloudEvents HTTP protocol binding 1.0.2 §3.1): every attribute and extension as
// a `ce-` header, percent-encoded (§3.1.3.2); datacontenttype as Content-Type; the data as the body.

/** The request headers that carry `event` in binary mode (the body is `event.data`). */
export function binaryHeaders(event: CloudEvent): Record<string, string> {
  const attributes = event.attributes
  // A source's events share specversion, source, type and dataschema: their encodings are cached, and only the
  // values that need it are escaped. No intermediate arrays or objects per event.
  const headers: Record<string, string> = {
    'ce-specversion': constant(attributes.specversion),
    'ce-id': percentEncode(attributes.id),
    'ce-source': constant(attributes.source),
    'ce-type': constant(attributes.type)
  }
  if (attributes.dataschema !== undefined) headers['ce-dataschema'] = constant(attributes.dataschema)
  if (attributes.subject !== undefined) headers['ce-subject'] = percentEncode(attributes.subject)
  if (attributes.time !== undefined) headers['ce-time'] = percentEncode(attributes.time)
  const extensions = event.extensions
  for (const name in extensions) headers[headerName(name)] = percentEncode(extensions[name] as string)
  if (attributes.datacontenttype !== undefined) headers['content-type'] = attributes.datacontenttype
  // W3C trace context travels as its own headers too, so instrumented sinks join the trace.
  for (const name of TRACE_EXTENSIONS) {
    const value = extensions[name]
    if (value !== undefined && TOKEN.test(value)) headers[name] = value
  }
  return headers
}

const TOKEN = /^[\x21-\x7e]+$/
const PLAIN = /^[\x21\x23\x24\x26-\x7e]*$/

// Bounded caches: per-source values and extension names are few; a flood of distinct ones just starts over.
const CACHE_LIMIT = 1024
const encodedValues = new Map<string, string>()
const headerNames = new Map<string, string>()

function constant(value: string): string {
  let encoded = encodedValues.get(value)
  if (encoded === undefined) {
    encoded = percentEncode(value)
    if (encodedValues.size >= CACHE_LIMIT) encodedValues.clear()
    encodedValues.set(value, encoded)
  }
  return encoded
}

function headerName(extension: string): string {
  let name = headerNames.get(extension)
  if (name === undefined) {
    name = `ce-${extension}`
    if (headerNames.size >= CACHE_LIMIT) headerNames.clear()
    headerNames.set(extension, name)
  }
  return name
}

/**
 * A header value per CloudEvents HTTP binding §3.1.3.2: space, `"`, `%` and every character outside U+0021–U+007E
 * become `%XY` escapes of their UTF-8 bytes (upper-case hex).
 */
export function percentEncode(value: string): string {
  if (PLAIN.test(value)) return value
  let out = ''
  for (const char of value) {
    const code = char.codePointAt(0) as number
    if (code >= 0x21 && code <= 0x7e && code !== 0x22 && code !== 0x25) {
      out += char
    } else {
      for (const byte of Buffer.from(char, 'utf8')) out += `%${byte.toString(16).toUpperCase().padStart(2, '0')}`
    }
  }
  return out
}
