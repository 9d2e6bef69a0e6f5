import type { CloudEvent } from './cloud-event.ts'
import { TRACE_EXTENSIONS } from './cloud-event.ts'

// The HTTP binary content mode (CloudEvents HTTP protocol binding 1.0.2 §3.1): every attribute and extension as
// a `ce-` header, percent-encoded (§3.1.3.2); datacontenttype as Content-Type; the data as the body.

/** The request headers that carry `event` in binary mode (the body is `event.data`). */
export function binaryHeaders(event: CloudEvent): Record<string, string> {
  const headers: Record<string, string> = {}
  const { datacontenttype, ...attributes } = event.attributes
  for (const [name, value] of Object.entries(attributes)) {
    if (value !== undefined) headers[`ce-${name}`] = percentEncode(value)
  }
  for (const [name, value] of Object.entries(event.extensions)) {
    headers[`ce-${name}`] = percentEncode(value)
  }
  if (datacontenttype !== undefined) headers['content-type'] = datacontenttype
  // W3C trace context travels as its own headers too, so instrumented sinks join the trace.
  for (const name of TRACE_EXTENSIONS) {
    const value = event.extensions[name]
    if (value !== undefined && /^[\x21-\x7e]+$/.test(value)) headers[name] = value
  }
  return headers
}

/**
 * A header value per CloudEvents HTTP binding §3.1.3.2: space, `"`, `%` and every character outside U+0021–U+007E
 * become `%XY` escapes of their UTF-8 bytes (upper-case hex).
 */
export function percentEncode(value: string): string {
  if (/^[\x21\x23\x24\x26-\x7e]*$/.test(value)) return value
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
