// The CloudEvent as the data plane handles it: context attributes, extensions as their canonical strings, and
// the data as the exact bytes to send. It is what a binary-mode HTTP request carries, nothing more.

/** CloudEvents 1.0 context attributes (the required four and the optional ones the spec defines). */
export interface CloudEventAttributes {
  readonly specversion: '1.0'
  readonly id: string
  readonly source: string
  readonly type: string
  readonly datacontenttype?: string
  readonly dataschema?: string
  readonly subject?: string
  /** RFC 3339. */
  readonly time?: string
}

/** A CloudEvent in binary form: attributes, extensions (canonical strings) and the data bytes. */
export interface CloudEvent {
  readonly attributes: CloudEventAttributes
  /** Extension attributes by name (lowercase a-z0-9), each its canonical string representation. */
  readonly extensions: Readonly<Record<string, string>>
  /** The payload, byte for byte; empty when the event has no data. */
  readonly data: Buffer
}

/** The W3C trace-context extensions (CloudEvents distributed tracing extension), also sent as plain headers. */
export const TRACE_EXTENSIONS: readonly string[] = Object.freeze(['traceparent', 'tracestate'])
