import { isUtf8 } from 'node:buffer'
import type { CloudEvent } from './cloud-event.ts'
import { isJsonText } from './json-text.ts'

// The HTTP binding's batched content mode (CloudEvents HTTP protocol binding 1.0.2 §3.3): one request whose body
// is a JSON array of events, each in the JSON event format (JSON format 1.0.2 §3), Content-Type
// `application/cloudevents-batch+json`.

/** The media type of a batched-mode body. */
export const BATCH_CONTENT_TYPE = 'application/cloudevents-batch+json'

/** Events sent as one batched-mode request: the events, and the body that carries them. */
export interface EventBatch {
  readonly events: readonly CloudEvent[]
  readonly body: Buffer
}

/** `events` as one batch: the body is the JSON array of their structured forms, in order. */
export function eventBatch(events: readonly CloudEvent[]): EventBatch {
  return { events, body: batchBody(events) }
}

/** Whether what is sent is a batch (a single event goes in binary mode). */
export function isBatch(outgoing: CloudEvent | EventBatch): outgoing is EventBatch {
  return 'events' in outgoing
}

/** The request headers of a batch. */
export const BATCH_HEADERS: Readonly<Record<string, string>> = Object.freeze({ 'content-type': BATCH_CONTENT_TYPE })

/**
 * One event in the JSON event format: the attributes and extensions as top-level string members, and the data
 * as §3.1 says — a JSON datacontenttype (or none, which means application/json) with data that parses as JSON
 * goes as the `data` value itself; a text datacontenttype with valid UTF-8 as a `data` string; anything else as
 * `data_base64`. Empty data is no data.
 */
export function structuredJson(event: CloudEvent): string {
  const writer = new BodyWriter()
  writer.event(event, '')
  return writer.take().toString('utf8')
}

// The body is written once, into a scratch buffer, then copied out at its exact size: each event's members as
// one string, its data as the producer's bytes (JSON) or one string (text, base64). No object per event, no
// JSON.stringify of the base64 text, no body-sized string to flatten and encode; JSON data is never decoded and
// re-encoded for the body.
function batchBody(events: readonly CloudEvent[]): Buffer {
  const writer = new BodyWriter()
  for (let i = 0; i < events.length; i++) writer.event(events[i] as CloudEvent, i === 0 ? '[' : ',')
  writer.string(events.length === 0 ? '[]' : ']')
  return writer.take()
}

// One buffer the bodies are written into, reused (encoding is synchronous, so one at a time): it grows to the
// largest body yet, and one past SCRATCH_KEEP_BYTES is let go once that body is copied out.
const SCRATCH_KEEP_BYTES = 4 * 1024 * 1024
let scratch = Buffer.allocUnsafeSlow(256 * 1024)

/** Writes JSON text into the scratch buffer; `take` copies it out. */
class BodyWriter {
  #at = 0

  take(): Buffer {
    const body = Buffer.allocUnsafe(this.#at)
    scratch.copy(body, 0, 0, this.#at)
    if (scratch.length > SCRATCH_KEEP_BYTES) scratch = Buffer.allocUnsafeSlow(256 * 1024)
    return body
  }

  string(text: string): void {
    // A UTF-16 code unit takes at most 3 bytes in UTF-8 (a surrogate pair, 2 units, takes 4).
    this.#room(text.length * 3)
    this.#at += scratch.write(text, this.#at)
  }

  /** ASCII text (base64): one byte a character. */
  ascii(text: string): void {
    this.#room(text.length)
    this.#at += scratch.write(text, this.#at, 'latin1')
  }

  bytes(bytes: Buffer): void {
    this.#room(bytes.length)
    this.#at += bytes.copy(scratch, this.#at)
  }

  #room(bytes: number): void {
    if (this.#at + bytes <= scratch.length) return
    const bigger = Buffer.allocUnsafeSlow(Math.max(scratch.length * 2, this.#at + bytes))
    scratch.copy(bigger, 0, 0, this.#at)
    scratch = bigger
  }

  event(event: CloudEvent, before: string): void {
    const head = before + members(event)
    const data = event.data
    if (data.length === 0) {
      this.string(`${head}}`)
      return
    }
    switch (dataForm(event.attributes.datacontenttype)) {
      case 'json':
        // The bytes are spliced in as they are once they are a JSON text: the sink gets the producer's JSON, not
        // a re-encoding. Checked on the bytes (a binary payload fails at its first byte), then as UTF-8.
        if (isJsonText(data) && isUtf8(data)) {
          this.string(`${head},"data":`)
          this.bytes(data)
          this.string('}')
          return
        }
        break
      case 'text':
        if (isUtf8(data)) {
          this.string(`${head},"data":${JSON.stringify(data.toString('utf8'))}}`)
          return
        }
        break
      case 'binary':
        break
    }
    // Base64 text needs no JSON escaping.
    this.string(`${head},"data_base64":"`)
    this.ascii(data.toString('base64'))
    this.string('"}')
  }
}

/**
 * The event's attributes, then its extensions (but not one named like an attribute that is set, nor `data` or
 * `data_base64`), as JSON members in that order: `{"specversion":"1.0",…` without the closing brace.
 */
function members(event: CloudEvent): string {
  const attributes = event.attributes as unknown as Readonly<Record<string, string | undefined>>
  const extensions = event.extensions
  let out = '{'
  for (const name in attributes) {
    const value = attributes[name]
    if (value === undefined) continue
    if (isIndexName(name)) return objectMembers(attributes, extensions)
    out += `${out.length === 1 ? '' : ','}${memberName(name)}${quote(value)}`
  }
  for (const name in extensions) {
    if (name === 'data' || name === 'data_base64' || has(attributes, name)) continue
    if (isIndexName(name)) return objectMembers(attributes, extensions)
    out += `${out.length === 1 ? '' : ','}${memberName(name)}${quote(extensions[name] as string)}`
  }
  return out
}

// A JSON object puts members named like array indices first, in numeric order: where a name like that occurs
// the members are an object's, so the output is the same as where they are not (only the order is at stake).
function objectMembers(
  attributes: Readonly<Record<string, string | undefined>>,
  extensions: Readonly<Record<string, string>>
): string {
  const object: Record<string, string> = {}
  for (const name in attributes) {
    const value = attributes[name]
    if (value !== undefined) object[name] = value
  }
  for (const name in extensions) {
    if (name !== 'data' && name !== 'data_base64' && !has(attributes, name)) object[name] = extensions[name] as string
  }
  return JSON.stringify(object).slice(0, -1)
}

function has(attributes: Readonly<Record<string, string | undefined>>, name: string): boolean {
  return Object.hasOwn(attributes, name) && attributes[name] !== undefined
}

// Names made only of digits may be array indices; a whole-object encoding decides their place.
function isIndexName(name: string): boolean {
  const first = name.charCodeAt(0)
  return first >= 0x30 && first <= 0x39
}

// A source's events share a few attribute and extension names: `"name":` is built once each (bounded: a flood of
// distinct names just starts over).
const NAME_CACHE_LIMIT = 1024
const memberNames = new Map<string, string>()

function memberName(name: string): string {
  let member = memberNames.get(name)
  if (member === undefined) {
    member = `${quote(name)}:`
    if (memberNames.size >= NAME_CACHE_LIMIT) memberNames.clear()
    memberNames.set(name, member)
  }
  return member
}

// What JSON.stringify makes of a string: most values need no escape, and are quoted as they are.
// eslint-disable-next-line no-control-regex -- control characters are exactly what JSON escapes
const NEEDS_ESCAPE = /[\u0000-\u001f"\\\ud800-\udfff]/
function quote(value: string): string {
  return NEEDS_ESCAPE.test(value) ? JSON.stringify(value) : `"${value}"`
}

/** How an event's data goes in the JSON format, by its datacontenttype (§3.1). */
type DataForm = 'json' | 'text' | 'binary'

// Bounded: a source's events share a few content types; a flood of distinct ones just starts over.
const FORM_CACHE_LIMIT = 256
const forms = new Map<string, DataForm>()

function dataForm(contentType: string | undefined): DataForm {
  if (contentType === undefined) return 'json'
  let form = forms.get(contentType)
  if (form === undefined) {
    const mediaType = contentType.split(';')[0]!.trim().toLowerCase()
    form =
      mediaType === 'application/json' || mediaType.endsWith('+json') || mediaType === 'text/json'
        ? 'json'
        : mediaType.startsWith('text/')
          ? 'text'
          : 'binary'
    if (forms.size >= FORM_CACHE_LIMIT) forms.clear()
    forms.set(contentType, form)
  }
  return form
}
