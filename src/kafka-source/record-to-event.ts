import { CLOUD_EVENT_ATTRIBUTE_NAME, CLOUD_EVENT_CONTEXT_ATTRIBUTES } from '../api/index.ts'
import type { CloudEventOverrides, KafkaKeyType } from '../api/index.ts'
import { isMediaType } from './attribute-checks.ts'
import type { CloudEvent, CloudEventAttributes } from '../delivery/index.ts'
import { TRACE_EXTENSIONS } from '../delivery/index.ts'
import type { KafkaRecord, RecordHeader } from './kafka-record.ts'
import { decodeUtf8, recordHeaders } from './kafka-record.ts'
import { isBinaryCloudEvent, isStructuredCloudEvent, parseBinary, parseStructured } from './passthrough.ts'
import { keyExtensionValue, textOrBase64 } from './record-key.ts'

// Knative KafkaSource's record → CloudEvent mapping (eventing-kafka-broker's dispatcher), plus its passthrough
// of records that already are CloudEvents. Pure: no I/O, no clock, never throws on record content.

/** The source a record was consumed for: its namespace and name make the event's `source`. */
export interface SourceRef {
  readonly namespace: string
  readonly name: string
}

export interface MappingOptions {
  /** `spec.ceOverrides`: extensions set on every event, passthrough included, last (as Knative does). */
  readonly ceOverrides?: CloudEventOverrides | undefined
  /** How a plain record's key becomes `key` / `partitionkey` (the key-type label); default `string`. */
  readonly keyType?: KafkaKeyType | undefined
}

/** How the event was obtained from the record. */
export type MappingMode = 'mapped' | 'binary' | 'structured'

/**
 * A record's CloudEvent, or `poison`: the record claims to be a CloudEvent and is not a valid one. `fallback`
 * is the record mapped as a plain record, so a dead letter sink still receives its bytes and coordinates.
 */
export type MappingResult =
  | { readonly kind: 'event'; readonly mode: MappingMode; readonly event: CloudEvent }
  | { readonly kind: 'poison'; readonly reason: string; readonly fallback: CloudEvent }

export const KAFKA_EVENT_TYPE = 'dev.knative.kafka.event'
/** Prefix of the extension each Kafka header becomes (Knative's rule). */
export const KAFKA_HEADER_PREFIX = 'kafkaheader'
/** The extensions Knative's dispatcher adds to every event it sends (CloudEventOverridesMutator), in decimal. */
export const KAFKA_PARTITION_EXTENSION = 'knativekafkapartition'
export const KAFKA_OFFSET_EXTENSION = 'knativekafkaoffset'

const EMPTY = Buffer.alloc(0)
const RESERVED = new Set(CLOUD_EVENT_CONTEXT_ATTRIBUTES)

/**
 * The CloudEvent for a Kafka record. A record with a `ce_specversion` header (binary mode) or a
 * `content-type: application/cloudevents…` header (structured mode) passes through as the event it carries;
 * any other record is mapped: id `partition:P/offset:O`, type `dev.knative.kafka.event`, source
 * `/apis/v1/namespaces/NS/kafkasources/NAME#TOPIC`, subject `partition:P#O`, time the record's timestamp,
 * the key as `key` and `partitionkey` (by `keyType`), each header as `kafkaheader<name>`. Every event, of every
 * mode, then gets `knativekafkapartition` and `knativekafkaoffset`, and `ceOverrides` last. See docs/delivery.md.
 */
export function recordToEvent(record: KafkaRecord, source: SourceRef, options: MappingOptions = {}): MappingResult {
  const headers = recordHeaders(record.headers)
  const value = record.value ?? EMPTY
  const contentTypeHeader = lastHeader(headers, 'content-type')
  const contentType = contentTypeHeader === undefined ? undefined : decodeUtf8(contentTypeHeader)
  let parsed: ReturnType<typeof parseBinary> | undefined
  let mode: MappingMode = 'mapped'
  if (isStructuredCloudEvent(contentType)) {
    parsed = parseStructured(contentType as string, value)
    mode = 'structured'
  } else if (isBinaryCloudEvent(headers)) {
    parsed = parseBinary(headers, value)
    mode = 'binary'
  }
  if (parsed !== undefined && !parsed.ok) {
    return {
      kind: 'poison',
      reason: `${mode} CloudEvent: ${parsed.reason}`,
      fallback: mapRecord(record, headers, source, options)
    }
  }
  const event =
    parsed === undefined ? mapRecord(record, headers, source, options) : finish(parsed.event, record, headers, options)
  return { kind: 'event', mode, event }
}

/** The `source` attribute Knative gives a KafkaSource's events. */
export function kafkaEventSource(source: SourceRef, topic: string): string {
  return `/apis/v1/namespaces/${source.namespace}/kafkasources/${source.name}#${topic}`
}

/** Knative's header → extension name: `kafkaheader` + the name lowercased, all but a-z and 0-9 removed. */
export function headerExtensionName(headerName: string): string {
  return KAFKA_HEADER_PREFIX + headerName.toLowerCase().replace(/[^a-z0-9]/g, '')
}

function mapRecord(
  record: KafkaRecord,
  headers: readonly RecordHeader[],
  source: SourceRef,
  options: MappingOptions
): CloudEvent {
  const partition = record.partition
  const offset = String(record.offset)
  const timestamp = Number(record.timestamp)
  const contentType = lastHeader(headers, 'content-type')
  const contentTypeText = contentType === undefined ? undefined : decodeUtf8(contentType)
  const attributes: Mutable<CloudEventAttributes> = {
    specversion: '1.0',
    id: `partition:${partition}/offset:${offset}`,
    source: sourceOf(source, record.topic),
    type: KAFKA_EVENT_TYPE,
    subject: `partition:${partition}#${offset}`
  }
  if (timestamp >= 0 && timestamp <= MAX_DATE_MS) attributes.time = isoTime(timestamp)
  // eventing-kafka's adapter took the content-type header as datacontenttype; kept, so sinks get a Content-Type.
  if (contentTypeText !== undefined && isMediaType(contentTypeText)) attributes.datacontenttype = contentTypeText
  const extensions: Record<string, string> = {}
  const key = keyExtensionValue(record.key, options.keyType ?? 'string')
  if (key !== undefined) {
    extensions['key'] = key
    extensions['partitionkey'] = key
  }
  for (const header of headers) {
    extensions[headerExtensionName(header.name)] = textOrBase64(header.value)
  }
  return finish({ attributes, extensions, data: record.value ?? EMPTY }, record, headers, options, true)
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] }

/** The latest time a Date holds (ECMA-262 §21.4.1.22); a record's int64 timestamp past it has no `time`. */
const MAX_DATE_MS = 8.64e15

// A partition's records mostly share their second, and toISOString costs about a microsecond: the text up to the
// milliseconds is built once per second (one entry: records come in offset order). Same text as toISOString.
let isoSecond = Number.NaN
let isoPrefix = ''

/** `new Date(ms).toISOString()` for 0 ≤ ms ≤ MAX_DATE_MS. */
function isoTime(ms: number): string {
  const whole = Math.trunc(ms)
  const second = Math.floor(whole / 1000)
  if (second !== isoSecond) {
    // Every ISO string ends `.sssZ`: the prefix is what comes before the milliseconds.
    isoPrefix = new Date(second * 1000).toISOString().slice(0, -4)
    isoSecond = second
  }
  const milli = whole - second * 1000
  return `${isoPrefix}${milli < 10 ? '00' : milli < 100 ? '0' : ''}${milli}Z`
}

// Per source, per topic: the `source` attribute, built once (the SourceRef a dispatcher passes is per source).
const eventSources = new WeakMap<SourceRef, Map<string, string>>()

function sourceOf(source: SourceRef, topic: string): string {
  let topics = eventSources.get(source)
  if (topics === undefined) {
    topics = new Map()
    eventSources.set(source, topics)
  }
  let value = topics.get(topic)
  if (value === undefined) {
    value = kafkaEventSource(source, topic)
    // Bounded: a source reads a few topics.
    if (topics.size < 1024) topics.set(topic, value)
  }
  return value
}

// Trace context from plain `traceparent`/`tracestate` headers (unless the event has its own), then the record's
// partition and offset (Knative's CloudEventOverridesMutator sets them on every event, replacing any the event
// carried), then overrides, last. `owned`: the event's extensions object is this mapping's own, so it is
// completed in place.
function finish(
  event: CloudEvent,
  record: KafkaRecord,
  headers: readonly RecordHeader[],
  options: MappingOptions,
  owned = false
): CloudEvent {
  const extensions: Record<string, string> = owned ? event.extensions : { ...event.extensions }
  for (const name of TRACE_EXTENSIONS) {
    if (extensions[name] !== undefined) continue
    const value = lastHeader(headers, name)
    const text = value === undefined ? undefined : decodeUtf8(value)
    if (text !== undefined && text !== '') extensions[name] = text
  }
  extensions[KAFKA_PARTITION_EXTENSION] = String(record.partition)
  extensions[KAFKA_OFFSET_EXTENSION] = String(record.offset)
  const overrides = options.ceOverrides?.extensions
  if (overrides !== undefined) {
    for (const [name, text] of Object.entries(overrides)) {
      // Validation refuses these names; a source written around it still cannot rewrite core attributes.
      if (CLOUD_EVENT_ATTRIBUTE_NAME.test(name) && !RESERVED.has(name)) extensions[name] = text
    }
  }
  return owned ? event : { attributes: event.attributes, extensions, data: event.data }
}

function lastHeader(headers: readonly RecordHeader[], name: string): Buffer | undefined {
  for (let i = headers.length - 1; i >= 0; i--) {
    const header = headers[i] as RecordHeader
    if (header.name.toLowerCase() === name) return header.value
  }
  return undefined
}
